-- Linkage audits for perturbed releases (random_walk(), noise), beside linkage_nearest(): an adversary who
-- knows the original values of numeric columns (and each person's id, to score the attack) links every
-- person to a released record. Each audit returns the share of people linked to their own record (by
-- id_column), counting a guess among m equally good candidates as 1/m. Pure SQL.

-- The argument checks shared by both audits: one row (ok := true) or an error naming the argument.
CREATE OR REPLACE MACRO anon_linkage_perturbed_checks(fn, release_table, original_table, columns, id_column) AS TABLE
SELECT r.ok AND o.ok AS ok
FROM anon_require_columns(fn, 'release_table', release_table, columns || [id_column]) r,
     anon_require_columns(fn, 'original_table', original_table, columns || [id_column]) o;

-- A list of column names, checked when the query is bound. (Checked inside a table argument: the list
-- itself is used inside COLUMNS lambdas, which cannot hold error().)
CREATE OR REPLACE MACRO anon_columns_arg(fn, arg, columns, id_column) AS
    CASE WHEN NOT typeof(columns) LIKE '%[]' OR try_cast(columns AS VARCHAR[]) IS NULL
              THEN error(fn || '(): argument ''' || arg || ''' must be a list of column names, e.g. [''age'', ''income'']')
         WHEN len(try_cast(columns AS VARCHAR[])) = 0 THEN error(fn || '(): argument ''' || arg || ''' must name at least one column')
         WHEN list_bool_or(list_transform(try_cast(columns AS VARCHAR[]), lambda q: q IS NULL OR anon_reserved_name(q)))
              THEN error(fn || '(): argument ''' || arg || ''' holds NULL or a reserved __anon_ name')
         WHEN len(list_distinct(list_transform(try_cast(columns AS VARCHAR[]), lambda q: lower(q)))) < len(try_cast(columns AS VARCHAR[]))
              THEN error(fn || '(): argument ''' || arg || ''' lists a column twice')
         WHEN list_contains(list_transform(try_cast(columns AS VARCHAR[]), lambda q: lower(q)), lower(anon_name_arg(fn, 'id_column', id_column, 'column')))
              THEN error(fn || '(): argument ''id_column'' must not be one of the columns')
         ELSE list_transform(try_cast(columns AS VARCHAR[]), lambda q: lower(q)) END;

-- (__anon_id, v): each row's id and its listed columns' values as DOUBLE[], in the order of the columns'
-- (lower-case) names, so two tables holding them in different orders give comparable vectors. Columns are
-- picked with COLUMNS(lambda ...) beside a constant sentinel column (__anon_none), which binds whether or not
-- a column is there (a missing one is reported by anon_require_columns).
CREATE OR REPLACE MACRO anon_qi_vectors(table_name, lower_qis, id_column) AS TABLE
SELECT __anon_id, list_transform(list_grade_up(names[2:]), lambda i: v[i + 1]) AS v  -- [1] is the sentinel
FROM (SELECT coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = lower(id_column))) AS __anon_id,
             list_transform(struct_keys(struct_pack(*COLUMNS(lambda c: c = '__anon_none' OR list_contains(lower_qis, lower(c))))),
                            lambda n: lower(n)) AS names,
             [*COLUMNS(lambda c: c = '__anon_none' OR list_contains(lower_qis, lower(c)))]::DOUBLE[] AS v
      FROM (SELECT NULL AS __anon_none, * FROM query_table(table_name)));

-- (__anon_id, d, x): each non-NULL value of the listed columns in long form; d numbers the columns in
-- the order of their sorted names (anon_qi_vectors' order), x is the value as DOUBLE.
CREATE OR REPLACE MACRO anon_long_values(table_name, lower_columns, id_column) AS TABLE
SELECT __anon_id::VARCHAR AS __anon_id, d, x
FROM (SELECT __anon_id, unnest(range(1, len(v) + 1)) AS d, unnest(v) AS x FROM anon_qi_vectors(table_name, lower_columns, id_column))
WHERE x IS NOT NULL AND __anon_id IS NOT NULL;

-- linkage_rank(): the adversary ranks the original values of each column and links each person to the
-- released record of the same rank. Ties in the original leave the m records of the tied ranks equally
-- likely (credit 1/m when the own record is among them). Jointly ('*'): the records whose rank lies in
-- the person's range in every column. One row per column and one for '*': column_name, people,
-- linked_to_own_record, mean_candidates. People are those with a value (all values, for '*') in both tables.
CREATE OR REPLACE MACRO anon_linkage_rank(release_table, original_table, cols, id_column) AS TABLE
WITH
checks AS (SELECT ok FROM anon_linkage_perturbed_checks('linkage_rank', release_table, original_table, cols, id_column)),
names AS (SELECT list_sort(cols) AS sorted),
orig AS (SELECT o.* FROM anon_long_values(original_table, cols, id_column) o, checks WHERE checks.ok),
rel AS (SELECT r.* FROM anon_long_values(release_table, cols, id_column) r, checks WHERE checks.ok),
shared AS MATERIALIZED (  -- people present with a value in both tables, per column
    SELECT o.__anon_id, o.d, o.x FROM orig o SEMI JOIN rel r ON r.__anon_id = o.__anon_id AND r.d = o.d),
ranges AS MATERIALIZED (  -- each person's range of ranks: the ranks their value's ties occupy
    SELECT __anon_id, d, rank() OVER (PARTITION BY d ORDER BY x) AS a,
           rank() OVER (PARTITION BY d ORDER BY x) + count(*) OVER (PARTITION BY d, x) - 1 AS b
    FROM shared),
released AS MATERIALIZED (
    SELECT r.__anon_id, r.d, row_number() OVER (PARTITION BY r.d ORDER BY r.x, r.__anon_id) AS rk
    FROM rel r SEMI JOIN shared s ON s.__anon_id = r.__anon_id AND s.d = r.d),
per_column AS (
    SELECT g.d, count(*) AS people,
           avg(CASE WHEN o.rk BETWEEN g.a AND g.b THEN 1.0 / (g.b - g.a + 1) ELSE 0 END) AS linked,
           avg(g.b - g.a + 1) AS candidates
    FROM ranges g JOIN released o USING (__anon_id, d) GROUP BY g.d),
complete AS (  -- people with every column; the column with the narrowest range starts their search
    SELECT __anon_id, arg_min(d, (b - a) * 1000 + d) AS start FROM ranges GROUP BY __anon_id
    HAVING count(*) = (SELECT len(cols))),
candidates AS MATERIALIZED (
    SELECT c.__anon_id AS person, r.__anon_id AS record
    -- the ranks a..b listed, so that records are found by an equi-join (a range join would pair every rank)
    FROM (SELECT c.__anon_id, g.d, unnest(range(g.a, g.b + 1)) AS rk
          FROM complete c JOIN ranges g ON g.__anon_id = c.__anon_id AND g.d = c.start) c
    JOIN released r USING (d, rk)),
person_ranges AS (  -- per person and per record, one list over the columns: only id equi-joins below
    SELECT __anon_id, list(a ORDER BY d) AS a, list(b ORDER BY d) AS b FROM ranges GROUP BY __anon_id),
record_ranks AS (SELECT __anon_id, list(rk ORDER BY d) AS rk FROM released GROUP BY __anon_id),
with_ranges AS MATERIALIZED (  -- materialized: keeps the joins in this order (id equalities only)
    SELECT k.person, k.record, g.a, g.b FROM candidates k JOIN person_ranges g ON g.__anon_id = k.person),
joint AS (  -- candidates whose rank lies in the person's range in every column
    SELECT k.person, k.record
    FROM with_ranges k JOIN record_ranks r ON r.__anon_id = k.record
    WHERE len(r.rk) = len(k.a)
      AND list_bool_and(list_transform(range(1, len(k.a) + 1), lambda i: r.rk[i] BETWEEN k.a[i] AND k.b[i]))),
per_person AS (
    SELECT c.__anon_id, count(j.record) AS n, bool_or(j.record = c.__anon_id) AS own
    FROM complete c LEFT JOIN joint j ON j.person = c.__anon_id GROUP BY c.__anon_id)
SELECT n.sorted[p.d] AS column_name, p.people, p.linked AS linked_to_own_record, p.candidates AS mean_candidates
FROM per_column p, names n
UNION ALL
SELECT '*', count(*), avg(CASE WHEN own THEN 1.0 / n ELSE 0 END), avg(n) FROM per_person
UNION ALL BY NAME  -- the checks as a branch of their own, so that they run on empty tables too (never a row)
SELECT NULL AS column_name FROM checks WHERE NOT ok
ORDER BY column_name = '*', column_name;

CREATE OR REPLACE MACRO linkage_rank(release_table, original_table, columns, id_column) AS TABLE
SELECT * FROM anon_linkage_rank(
    CASE WHEN anon_columns_arg('linkage_rank', 'columns', columns, id_column) IS NOT NULL
         THEN anon_name_arg('linkage_rank', 'release_table', release_table, 'table') END,
    anon_name_arg('linkage_rank', 'original_table', original_table, 'table'),
    list_transform(try_cast(columns AS VARCHAR[]), lambda q: lower(q)), id_column::VARCHAR);

-- linkage_pattern(): the adversary knows the original column and the segmenting rule (sorted values, ties
-- in row order, cut every segment_size values), so each person's segment and position, and looks in the
-- release for each segment moved as a block: a shift c that puts most of its distinct values onto released
-- values (within t = tolerance standard deviations of the original column). Candidate shifts come from
-- words: every run of seven consecutive values of a segment (ties repeated; fewer in a shorter segment) is
-- looked up by its offsets from its first value among runs of released values that follow one another,
-- up to two other released values allowed in between (another segment's); each match proposes the shift
-- that places the run. Runs of released values that more than 20 others resemble (the same buckets of offsets,
-- e.g. runs of near-equal values) are left out: they carry no pattern and would only multiply the matches.
-- The four shifts proposed most often in a segment are scored by how many of its distinct values land
-- within t of a released value; the best is kept when it places at least half of them. Then rank to rank:
-- the m people holding value v are linked, in row order, to the m released records nearest v + c, in value
-- order. Segments of one repeated value have no pattern. Whole-segment shifts ('domain' bounds) leave every
-- segment's shape intact and fall to it. One row: people, linked_to_own_record, segments, segments_found.
CREATE OR REPLACE MACRO anon_linkage_pattern(release_table, original_table, column_name, id_column, segment_size, tolerance) AS TABLE
WITH
checks AS (
    SELECT k.ok
       AND anon_check(NOT anon_is_integer(segment_size) OR segment_size < 3, 'linkage_pattern', 'segment_size',
                      'must be an integer of at least 3, got ' || coalesce(segment_size::VARCHAR, 'NULL'))
       AND anon_at_most('linkage_pattern', 'segment_size', segment_size, 'segment_size')
       AND anon_check(NOT coalesce(try_cast(tolerance AS DOUBLE) > 0 AND isfinite(try_cast(tolerance AS DOUBLE)), false),
                      'linkage_pattern', 'tolerance', 'must be a positive number (standard deviations), got '
                      || coalesce(tolerance::VARCHAR, 'NULL')) AS ok
    FROM anon_linkage_perturbed_checks('linkage_pattern', release_table, original_table, [column_name], id_column) k),
orig AS MATERIALIZED (  -- the original column with ids, in segments (row_id: the scan position)
    SELECT s.segment, s.pos, s.value AS v, o.grp AS __anon_id
    FROM anon_segments(original_table, column_name, segment_size, NULL) s
    JOIN anon_column_of(original_table, column_name, id_column) o ON o.__anon_row = s.row_id, checks WHERE checks.ok),
rel AS MATERIALIZED (  -- released values in value order
    SELECT try_cast(value AS DOUBLE) AS y, grp AS __anon_id, row_number() OVER (ORDER BY try_cast(value AS DOUBLE), grp) AS rk
    FROM anon_column_of(release_table, column_name, id_column), checks WHERE checks.ok AND value IS NOT NULL),
tol AS (  -- t in the column's units; offsets are looked up in buckets of width 4t (two values' tolerance each side)
    SELECT try_cast(tolerance AS DOUBLE) * coalesce(stddev_pop(v), 0) AS t, 4 * try_cast(tolerance AS DOUBLE) * coalesce(stddev_pop(v), 0) AS w,
           (SELECT count(*) FROM rel) AS n
    FROM orig),
vals AS MATERIALIZED (  -- each segment's distinct values
    SELECT segment, v, count(*) AS m, count(*) OVER (PARTITION BY segment) AS distinct_values FROM orig GROUP BY segment, v),
words AS MATERIALIZED (  -- runs of consecutive values: the first, and the offsets of the next 1 to 6 from it
    SELECT segment, v0, d[:least(6, size - 1)] AS d, t, w
    FROM (SELECT segment, pos, count(*) OVER (PARTITION BY segment) AS size, v AS v0,
                 [lead(v, 1) OVER s - v, lead(v, 2) OVER s - v, lead(v, 3) OVER s - v, lead(v, 4) OVER s - v,
                  lead(v, 5) OVER s - v, lead(v, 6) OVER s - v] AS d
          FROM orig WINDOW s AS (PARTITION BY segment ORDER BY pos)), tol
    WHERE size > 1 AND pos <= size - least(6, size - 1) AND d[least(6, size - 1)] > 2 * t),  -- not all one value
probes AS (  -- each word under every bucket list its released match may have: per offset x, released within 2t,
             -- the buckets of x - 2t and of x + 2t; each combination once (bit i of mask: which one)
    SELECT segment, v0, d, t, hash(list_transform(range(len(d)), lambda i: CASE WHEN mask >> i & 1 = 0 THEN lo[i + 1] ELSE hi[i + 1] END)) AS k
    FROM (SELECT *, unnest(range(1 << len(d))) AS mask
          FROM (SELECT segment, v0, d, t, list_transform(d, lambda x: floor((x - 2 * t) / w)) AS lo,
                       list_transform(d, lambda x: floor((x + 2 * t) / w)) AS hi FROM words))
    WHERE list_bool_and(list_transform(range(len(d)), lambda i: mask >> i & 1 = 0 OR hi[i + 1] > lo[i + 1]))),
offsets AS (  -- the released values after the first that make a word of l offsets: all but two of the next l + 2
    SELECT list_filter(range(1, l + 3), lambda x: x <> e AND x <> f) AS o
    FROM range(1, 7) a(l), range(1, 9) b(e), range(1, 9) c(f) WHERE e < f AND f <= l + 2 AND l IN (SELECT DISTINCT len(d) FROM words)),
rel_words AS MATERIALIZED (  -- released words and their buckets, but for buckets more than 20 words share
    SELECT y, d, hash(list_transform(d, lambda x: floor(x / w))) AS k
    FROM (SELECT r.y, list_transform(o.o, lambda p: r.nxt[p] - r.y) AS d
          FROM (SELECT y, list(y) OVER (ORDER BY rk ROWS BETWEEN 1 FOLLOWING AND 8 FOLLOWING) AS nxt FROM rel) r, offsets o
          WHERE len(r.nxt) >= o.o[-1]), tol
    QUALIFY count(*) OVER (PARTITION BY k) <= 20),
proposed AS (  -- a released run within 2t of the word's every offset proposes the mean displacement of its values
    SELECT p.segment, r.y - p.v0 + (list_sum(r.d) - list_sum(p.d)) / (len(p.d) + 1) AS c
    FROM probes p JOIN rel_words r ON r.k = p.k  -- (equal hashes of unequal buckets fail the test below)
    WHERE len(r.d) = len(p.d) AND list_bool_and(list_transform(range(1, len(p.d) + 1), lambda i: abs(r.d[i] - p.d[i]) <= 2 * p.t))),
kept AS MATERIALIZED (  -- per segment, the four buckets (2t wide) with the most proposals in them and either side;
                        -- their shift: the median of those proposals
    SELECT segment, list_aggregate(cs, 'median') AS c FROM (
        SELECT segment, bucket, flatten(list(cs) OVER near) AS cs, sum(votes) OVER near AS votes
        FROM (SELECT segment, floor(c / (2 * (SELECT t FROM tol))) AS bucket, list(c) AS cs, count(*) AS votes
              FROM proposed GROUP BY ALL)
        WINDOW near AS (PARTITION BY segment ORDER BY bucket RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING))
    QUALIFY row_number() OVER (PARTITION BY segment ORDER BY votes DESC, bucket) <= 4),
scored AS (  -- how many of the segment's distinct values land within t of a released value
    SELECT p.segment, p.c, count(*) FILTER (WHERE r.y <= p.lo + 2 * p.t) AS score
    FROM (SELECT k.segment, k.c, tol.t, w.v + k.c - tol.t AS lo
          FROM kept k JOIN vals w ON w.segment = k.segment, tol) p
    ASOF LEFT JOIN rel r ON p.lo <= r.y
    GROUP BY p.segment, p.c),
found AS (
    SELECT b.segment, b.c
    FROM (SELECT segment, max_by(c, {'score': score, 'c': -c}) AS c, max(score) AS score FROM scored GROUP BY segment) b
    JOIN (SELECT segment, any_value(distinct_values) AS dv FROM vals GROUP BY segment) d USING (segment)
    WHERE b.score >= d.dv / 2.0),
targets AS (  -- per found value: v + c, its m holders, and the rank of the first released value at or above it
    SELECT v.segment, v.v, v.m, v.v + f.c AS target, coalesce(r.rk, (SELECT n FROM tol) + 1) AS p0
    FROM vals v JOIN found f USING (segment) ASOF LEFT JOIN rel r ON v.v + f.c <= r.y),
nearest AS (  -- the m released records nearest each target (among the m ranks either side), in value order
    SELECT segment, v, __anon_id, row_number() OVER (PARTITION BY segment, v ORDER BY rk) AS place
    FROM (SELECT t.segment, t.v, r.__anon_id, r.rk,
                 row_number() OVER (PARTITION BY t.segment, t.v ORDER BY abs(r.y - t.target), r.rk) AS closeness, t.m
          FROM (SELECT *, unnest(range(p0 - m, p0 + m)) AS rk FROM targets) t JOIN rel r USING (rk))
    WHERE closeness <= m),
holders AS (  -- the people holding each value, numbered in row (segment) order
    SELECT segment, v, __anon_id, row_number() OVER (PARTITION BY segment, v ORDER BY pos) AS place FROM orig),
people AS (SELECT o.* FROM orig o SEMI JOIN rel r ON r.__anon_id = o.__anon_id)
SELECT count(*) AS people,
       coalesce(avg(CASE WHEN n.__anon_id = p.__anon_id THEN 1.0 ELSE 0.0 END), NULL) AS linked_to_own_record,
       (SELECT count(DISTINCT segment) FROM orig) AS segments, (SELECT count(*) FROM found) AS segments_found
FROM people p
LEFT JOIN holders h ON h.__anon_id = p.__anon_id AND h.segment = p.segment AND h.v = p.v
LEFT JOIN nearest n ON n.segment = h.segment AND n.v = h.v AND n.place = h.place
UNION ALL BY NAME  -- the checks as a branch of their own, so that they run on empty tables too (never a row)
SELECT NULL AS people FROM checks WHERE NOT ok;

CREATE OR REPLACE MACRO linkage_pattern(release_table, original_table, column_name, id_column, segment_size := 20,
                                        tolerance := 1e-5) AS TABLE
SELECT * FROM anon_linkage_pattern(CASE WHEN anon_name_arg('linkage_pattern', 'id_column', id_column, 'column') IS NOT NULL
                                        THEN anon_name_arg('linkage_pattern', 'release_table', release_table, 'table') END,
                                   CASE WHEN anon_name_arg('linkage_pattern', 'column_name', column_name, 'column') IS NOT NULL
                                        THEN anon_name_arg('linkage_pattern', 'original_table', original_table, 'table') END,
                                   column_name,
                                   id_column::VARCHAR, segment_size, tolerance);
