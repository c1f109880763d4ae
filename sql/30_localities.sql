-- Locality properties of a numeric column (Xue, Karras et al., CIKM 2011, "properties of interest").
--
-- The column's non-NULL values, sorted (ties in row order), are cut into segments of `segment_size`
-- consecutive values (optionally within groups of another column). In a segment d_1 <= ... <= d_n, every
-- triple i < j < k satisfies |d_j - d_i| <= |d_k - d_j| or >=; with the order x_t <= x_{t+1} also kept,
-- it is the linear constraint (x_j - x_i) <= (x_k - x_j) or (x_j - x_i) >= (x_k - x_j).
--
-- Extraction with pruning (the paper's Algorithm 1): for every pair i < j, with beta = 2 d_j - d_i,
--   k+ = the first index with d_k > beta gives x_j - x_i <= x_{k+} - x_j, and
--   k- = the last index with d_k < beta, used only if k- > j, gives x_j - x_i >= x_{k-} - x_j.
-- Every other strict triple follows from these two and the order chain. Values equal to beta are
-- skipped (strict neighbours), so no equality constraint arises. Found with two ASOF joins per pair
-- against the segment's distinct values: quadratic in the segment size, one row per constraint.

-- Arguments are checked when the query is bound where they can be (a table-function argument is folded
-- then, so error() fires before anything is read): a table or column name must be a string, not a
-- reserved __anon_ name.
CREATE OR REPLACE MACRO anon_name_arg(fn, arg, name, what) AS
    CASE WHEN name IS NULL OR typeof(name) <> 'VARCHAR'
              THEN error(fn || '(): argument ''' || arg || ''' must be a ' || what || ' name, got ' || coalesce(name::VARCHAR, 'NULL'))
         WHEN anon_reserved_name(name)
              THEN error(fn || '(): argument ''' || arg || ''' is a reserved __anon_ name')
         WHEN what = 'table' THEN anon_after(anon_name_ok(fn, arg, name), name::VARCHAR)
         ELSE name::VARCHAR END;

-- The table of a (table, column) pair of arguments, both checked: the column name is checked here, with the
-- table, because it is only used inside a COLUMNS lambda, which cannot hold error().
CREATE OR REPLACE MACRO anon_source_arg(fn, table_name, column_name) AS
    CASE WHEN anon_name_arg(fn, 'column_name', column_name, 'column') IS NOT NULL
         THEN anon_name_arg(fn, 'table_name', table_name, 'table') END;

CREATE OR REPLACE MACRO anon_is_integer(x) AS regexp_matches(typeof(x), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$');

-- Each row's scan position (1-based, as anon_numbered()), the column's value and the group's, picked with
-- COLUMNS(lambda ...) beside a NULL sentinel column: that binds whether or not the table has the columns
-- (anon_column_checks reports a missing one by name), and coalesce(sentinel, column) is the column.
CREATE OR REPLACE MACRO anon_column_of(table_name, column_name, group_by) AS TABLE
SELECT __anon_row,
       coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = lower(column_name::VARCHAR))) AS value,
       coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = lower(coalesce(group_by::VARCHAR, '__anon_none'))))::VARCHAR AS grp
FROM (SELECT row_number() OVER () AS __anon_row, NULL AS __anon_none, * FROM query_table(table_name));

-- One row (ok := true), or an error naming fn and the argument: the table has a column of a reserved name
-- (the macros number and pick columns under such names), lacks the column or the group column, or the
-- column is not numeric.
CREATE OR REPLACE MACRO anon_column_checks(fn, table_name, col, group_by) AS TABLE
WITH have AS (SELECT list(column_name) AS given, list(lower(column_name)) AS names FROM (DESCRIBE FROM query_table(table_name)))
SELECT CASE WHEN NOT anon_no_reserved_columns(fn, table_name, h.given) THEN NULL
            WHEN typeof(group_by) = 'VARCHAR' AND anon_reserved_name(group_by)
                 THEN anon_check(true, fn, 'group_by', 'is a reserved __anon_ name: ' || anon_shown(group_by))
            WHEN NOT list_contains(h.names, lower(col::VARCHAR))
                 THEN anon_check(true, fn, 'column_name', 'names no column of ''' || table_name || ''' (its columns: '
                                 || array_to_string(h.names, ', ') || ')')
            WHEN group_by IS NOT NULL AND (typeof(group_by) <> 'VARCHAR' OR NOT list_contains(h.names, lower(group_by::VARCHAR)))
                 THEN anon_check(true, fn, 'group_by', 'must be NULL or a column of ''' || table_name || '''')
            ELSE anon_check((SELECT NOT anon_is_numeric(any_value(value)) OR anon_is_temporal(any_value(value))
                             FROM anon_column_of(table_name, col, NULL)),
                            fn, 'column_name', '''' || col::VARCHAR || ''' must be numeric') END AS ok
FROM have h;

-- Rows of the column in segment order: (row_id, grp, segment, pos, value). row_id is the scan position
-- (1-based), the same identity as mondrian_classes(); segment numbers run 1, 2, ... over (group, cut).
CREATE OR REPLACE MACRO anon_segments(table_name, column_name, segment_size, group_by) AS TABLE
WITH placed AS (
    SELECT __anon_row AS row_id, grp, try_cast(value AS DOUBLE) AS value,
           (row_number() OVER (PARTITION BY grp ORDER BY try_cast(value AS DOUBLE), __anon_row) - 1) AS rank_in_group
    FROM anon_column_of(table_name, column_name, group_by) WHERE value IS NOT NULL)
SELECT row_id, grp,
       dense_rank() OVER (ORDER BY grp NULLS FIRST, rank_in_group // try_cast(segment_size AS BIGINT)) AS segment,
       (rank_in_group % try_cast(segment_size AS BIGINT)) + 1 AS pos,
       value
FROM placed;

CREATE OR REPLACE MACRO anon_localities_checks(table_name, column_name, segment_size, sample, seed, group_by) AS TABLE
SELECT c.ok
   AND anon_check(NOT anon_is_integer(segment_size) OR segment_size < 3, 'localities', 'segment_size',
                  'must be an integer of at least 3, got ' || coalesce(segment_size::VARCHAR, 'NULL'))
   AND anon_at_most('localities', 'segment_size', segment_size, 'segment_size')
   AND anon_check(NOT coalesce(try_cast(sample AS DOUBLE) > 0 AND try_cast(sample AS DOUBLE) <= 1, false),
                  'localities', 'sample', 'must be a number in (0, 1], got ' || coalesce(sample::VARCHAR, 'NULL'))
   AND anon_check(NOT anon_is_integer(seed) OR seed < 0, 'localities', 'seed',
                  'must be an integer >= 0, got ' || coalesce(seed::VARCHAR, 'NULL')) AS ok
FROM anon_column_checks('localities', table_name, column_name, group_by) c;

-- The columns a locality table must have, and its rows read without naming a column it may lack (every
-- needed column, NULL where the table has none), so that a wrong-shaped table is reported by name
-- (anon_require_columns) instead of failing to bind.
CREATE OR REPLACE MACRO anon_locality_columns() AS
    ['segment', 'i', 'j', 'k', 'relation', 'i_row', 'j_row', 'k_row', 'd_i', 'd_j', 'd_k'];

CREATE OR REPLACE MACRO anon_locality_rows(locality_table) AS TABLE
(SELECT NULL::BIGINT AS segment, NULL::BIGINT AS i, NULL::BIGINT AS j, NULL::BIGINT AS k, NULL::VARCHAR AS relation,
        NULL::BIGINT AS i_row, NULL::BIGINT AS j_row, NULL::BIGINT AS k_row, NULL::DOUBLE AS d_i, NULL::DOUBLE AS d_j,
        NULL::DOUBLE AS d_k, NULL::BIGINT AS segment_size LIMIT 0)
UNION ALL BY NAME
(SELECT * FROM query_table(locality_table));

-- The segment size to cut the column with: the one given, else the one the locality table carries (its
-- column segment_size, which localities() writes), else localities()'s default, 20.
CREATE OR REPLACE MACRO anon_locality_segment_size(locality_table, segment_size) AS
    coalesce(try_cast(segment_size AS BIGINT), (SELECT max(l.segment_size) FROM anon_locality_rows(locality_table) l), 20);

-- One row per kept constraint: segment, the row ids i_row < j_row < k_row (scan positions) and their
-- positions and values in the segment, and relation: '<=' means x_j - x_i <= x_k - x_j, '>=' the reverse.
-- sample keeps each constraint with that probability, reproducibly from seed. The defaults (segments of
-- 20, a tenth of the constraints) are those random_walk()'s defaults were measured with.
CREATE OR REPLACE MACRO localities(table_name, column_name, segment_size := 20, sample := 0.1, seed := 0,
                                   group_by := NULL) AS TABLE
WITH
checks AS (SELECT ok FROM anon_localities_checks(anon_source_arg('localities', table_name, column_name), column_name,
                                                 segment_size, sample, seed, group_by)),
seg AS MATERIALIZED (SELECT * FROM anon_segments(anon_source_arg('localities', table_name, column_name), column_name,
                                                 segment_size, group_by), checks WHERE checks.ok),
distinct_values AS (  -- ties: the first and last position of each value
    SELECT segment, value, min(pos) AS first_pos, max(pos) AS last_pos FROM seg GROUP BY segment, value),
pairs AS (
    SELECT a.segment, a.pos AS i, b.pos AS j, a.row_id AS i_row, b.row_id AS j_row,
           a.value AS d_i, b.value AS d_j, 2 * b.value - a.value AS beta
    FROM seg a JOIN seg b ON a.segment = b.segment AND a.pos < b.pos),
found AS (
    SELECT p.*, '<=' AS relation, up.first_pos AS k       -- first value above beta
    FROM pairs p ASOF JOIN distinct_values up ON p.segment = up.segment AND p.beta < up.value
    UNION ALL
    SELECT p.*, '>=' AS relation, down.last_pos AS k      -- last value below beta, if it lies after j
    FROM pairs p ASOF JOIN distinct_values down ON p.segment = down.segment AND p.beta > down.value
    WHERE down.last_pos > p.j)
SELECT f.segment, f.i, f.j, f.k, f.relation, f.i_row, f.j_row, s.row_id AS k_row, f.d_i, f.d_j, s.value AS d_k,
       try_cast(segment_size AS BIGINT) AS segment_size  -- carried, so that random_walk() cuts the same segments
FROM found f JOIN seg s ON s.segment = f.segment AND s.pos = f.k
WHERE hash(seed, f.segment, f.i, f.j, f.relation)::DOUBLE / 18446744073709551616.0 < try_cast(sample AS DOUBLE)
-- the checks as a branch of their own, so that they run even when nothing else does (never a row)
UNION ALL BY NAME
SELECT NULL AS segment FROM checks WHERE NOT ok;

-- Constraints of a locality table that a release breaks: each row of the locality table, checked on the
-- released column's values at its three row ids (scan positions of the release, which keeps the source's
-- row identities only if read in the same order: join on an id column when you have one). Also checks the
-- order constraints of each segment. Returns the violated constraints; an empty result means none.
CREATE OR REPLACE MACRO check_localities(table_name, column_name, locality_table) AS TABLE
WITH
checks AS (
    SELECT c.ok AND l.ok AS ok
    FROM anon_column_checks('check_localities', anon_source_arg('check_localities', table_name, column_name),
                            column_name, NULL) c,
         anon_require_columns('check_localities', 'locality_table',
                              anon_name_arg('check_localities', 'locality_table', locality_table, 'table'),
                              anon_locality_columns()) l),
rel AS (SELECT __anon_row AS row_id, try_cast(value AS DOUBLE) AS x
        FROM anon_column_of(anon_source_arg('check_localities', table_name, column_name), column_name, NULL), checks
        WHERE checks.ok),
loc AS (SELECT l.* FROM anon_locality_rows(anon_name_arg('check_localities', 'locality_table', locality_table, 'table')) l,
        checks WHERE checks.ok),
triples AS (
    SELECT l.segment, l.i, l.j, l.k, l.relation, l.i_row, l.j_row, l.k_row, xi.x AS x_i, xj.x AS x_j, xk.x AS x_k
    FROM loc l JOIN rel xi ON xi.row_id = l.i_row JOIN rel xj ON xj.row_id = l.j_row JOIN rel xk ON xk.row_id = l.k_row),
order_pairs AS (  -- consecutive positions of each segment named in the locality table
    SELECT DISTINCT segment, pos, row_id FROM (
        SELECT segment, i AS pos, i_row AS row_id FROM loc UNION ALL SELECT segment, j, j_row FROM loc
        UNION ALL SELECT segment, k, k_row FROM loc))
SELECT segment, i, j, k, relation, i_row, j_row, k_row, x_i, x_j, x_k FROM triples
WHERE x_i IS NULL OR x_j IS NULL OR x_k IS NULL
   OR CASE relation WHEN '<=' THEN NOT (x_j - x_i <= x_k - x_j) ELSE NOT (x_j - x_i >= x_k - x_j) END
UNION ALL
SELECT o.segment, o.pos, o.next_pos, NULL, 'order', o.row_id, o.next_row, NULL, xa.x, xb.x, NULL
FROM (SELECT *, lead(pos) OVER w AS next_pos, lead(row_id) OVER w AS next_row
      FROM order_pairs WINDOW w AS (PARTITION BY segment ORDER BY pos)) o
JOIN rel xa ON xa.row_id = o.row_id JOIN rel xb ON xb.row_id = o.next_row
WHERE NOT (xa.x <= xb.x)
UNION ALL  -- the checks as a branch of their own, so that they run even on an empty table (never a row)
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM checks WHERE NOT ok;
