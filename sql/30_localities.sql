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

-- Rows of the column in segment order: (row_id, grp, segment, pos, value). row_id is the scan position
-- (1-based), the same identity as mondrian_classes(); segment numbers run 1, 2, ... over (group, cut).
CREATE OR REPLACE MACRO anon_segments(table_name, column_name, segment_size, group_by) AS TABLE
WITH v AS (
    SELECT __anon_row AS row_id,
           CASE WHEN group_by IS NULL THEN NULL ELSE COLUMNS([coalesce(group_by, column_name)])::VARCHAR END AS grp,
           COLUMNS([column_name]) AS value
    FROM anon_numbered(table_name)),
placed AS (
    SELECT row_id, grp, value,
           (row_number() OVER (PARTITION BY grp ORDER BY value, row_id) - 1) AS rank_in_group
    FROM v WHERE value IS NOT NULL)
SELECT row_id, grp,
       dense_rank() OVER (ORDER BY grp NULLS FIRST, rank_in_group // segment_size) AS segment,
       (rank_in_group % segment_size) + 1 AS pos,
       value::DOUBLE AS value
FROM placed;

CREATE OR REPLACE MACRO anon_localities_checks(table_name, column_name, segment_size, sample) AS TABLE
SELECT anon_check(typeof(column_name) <> 'VARCHAR', 'localities', 'column', 'must be a column name')
   AND anon_check(NOT regexp_matches(typeof(segment_size), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$')
                  OR segment_size < 3, 'localities', 'segment_size', 'must be an integer of at least 3, got '
                  || coalesce(segment_size::VARCHAR, 'NULL'))
   AND anon_check(sample IS NULL OR NOT (sample > 0 AND sample <= 1), 'localities', 'sample',
                  'must be in (0, 1], got ' || coalesce(sample::VARCHAR, 'NULL'))
   AND anon_check((SELECT NOT anon_is_numeric(any_value(COLUMNS([column_name])))
                          OR anon_is_temporal(any_value(COLUMNS([column_name])))
                   FROM query_table(table_name)),
                  'localities', 'column', '''' || column_name || ''' must be numeric') AS ok;

-- One row per kept constraint: segment, the row ids i_row < j_row < k_row (scan positions) and their
-- positions and values in the segment, and relation: '<=' means x_j - x_i <= x_k - x_j, '>=' the reverse.
-- sample keeps each constraint with that probability, reproducibly from seed.
CREATE OR REPLACE MACRO localities(table_name, column_name, segment_size := 100, sample := 1.0, seed := 0,
                                   group_by := NULL) AS TABLE
WITH
checks AS (SELECT ok FROM anon_localities_checks(table_name, column_name, segment_size, sample)),
seg AS MATERIALIZED (SELECT * FROM anon_segments(table_name, column_name, segment_size, group_by), checks WHERE checks.ok),
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
SELECT f.segment, f.i, f.j, f.k, f.relation, f.i_row, f.j_row, s.row_id AS k_row, f.d_i, f.d_j, s.value AS d_k
FROM found f JOIN seg s ON s.segment = f.segment AND s.pos = f.k
WHERE hash(seed, f.segment, f.i, f.j, f.relation)::DOUBLE / 18446744073709551616.0 < sample;

-- Constraints of a locality table that a release breaks: each row of the locality table, checked on the
-- released column's values at its three row ids (scan positions of the release, which keeps the source's
-- row identities only if read in the same order: join on an id column when you have one). Also checks the
-- order constraints of each segment. Returns the violated constraints; an empty result means none.
CREATE OR REPLACE MACRO check_localities(table_name, column_name, locality_table) AS TABLE
WITH
rel AS (SELECT __anon_row AS row_id, COLUMNS([column_name])::DOUBLE AS x FROM anon_numbered(table_name)),
loc AS (SELECT * FROM query_table(locality_table)),
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
WHERE NOT (xa.x <= xb.x);
