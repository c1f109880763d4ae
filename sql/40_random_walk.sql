-- random_walk(): the release of pattern-preserving anonymization. NEEDS THE PYTHON PACKAGE: the walk is the
-- numpy kernel duckdb_anon.walk, registered by duckdb_anon.install() as the UDF anon_random_walk. A plain
-- DuckDB client that opens the file can call every other function, but not this one.
--
-- random_walk(table_name, column_name, locality_table, iterations := 1000, seed := 0, lower := NULL,
--             upper := NULL, method := 'hit_and_run', segment_size := NULL, group_by := NULL,
--             bounds := 'radius', radius := 0.5)
-- Every source row and column; the column is replaced by its walked values (DOUBLE), which satisfy every
-- constraint of locality_table, the order within each segment, and one box per value (the paper's bound
-- vector H):
--   'radius'  (default) each value stays within `radius` standard deviations (of the column) of its own
--             original value, and within lower/upper (default: the column's min and max, so a column that
--             is never negative is never released negative; a semantic domain such as age 0-120 gives
--             the extremes room to move);
--   'domain'  every value between lower and upper (default: the column's min and max): whole segments can
--             be carried anywhere in the column, which destroys the data yet keeps each segment's shape;
--   'segment' each segment up to the midpoints to its neighbours' edge values, so the whole column keeps
--             its order.
-- NULLs stay NULL. segment_size defaults to the one the locality table carries (localities() writes it);
-- group_by must be the one the table was made with; a table that does not match the column's segments is
-- an error.

-- One row (ok := true), or an error naming the argument at fault.
CREATE OR REPLACE MACRO anon_walk_checks(table_name, column_name, locality_table, iterations, seed, lower, upper,
                                         method, segment_size, group_by, bounds, radius) AS TABLE
SELECT c.ok AND l.ok
   AND anon_check(NOT anon_is_integer(iterations) OR iterations < 0, 'random_walk', 'iterations',
                  'must be an integer >= 0, got ' || coalesce(iterations::VARCHAR, 'NULL'))
   AND anon_at_most('random_walk', 'iterations', iterations, 'iterations')
   AND anon_check(NOT anon_is_integer(seed) OR seed < 0, 'random_walk', 'seed',
                  'must be an integer >= 0, got ' || coalesce(seed::VARCHAR, 'NULL'))
   AND anon_check(segment_size IS NOT NULL AND (NOT anon_is_integer(segment_size) OR segment_size < 3), 'random_walk',
                  'segment_size', 'must be an integer of at least 3 (or NULL: the locality table''s), got ' || segment_size::VARCHAR)
   AND anon_at_most('random_walk', 'segment_size', segment_size, 'segment_size')
   AND anon_check(bounds IS NULL OR bounds::VARCHAR NOT IN ('radius', 'domain', 'segment'), 'random_walk', 'bounds',
                  'must be ''radius'', ''domain'' or ''segment'', got ' || coalesce('''' || bounds::VARCHAR || '''', 'NULL'))
   AND anon_check(bounds = 'radius' AND NOT coalesce(anon_is_numeric(radius) AND NOT anon_is_temporal(radius)
                                                     AND try_cast(radius AS DOUBLE) > 0 AND isfinite(try_cast(radius AS DOUBLE)), false),
                  'random_walk', 'radius', 'must be a positive number (standard deviations), got ' || coalesce(radius::VARCHAR, 'NULL'))
   AND anon_check(method IS NULL OR method::VARCHAR NOT IN ('hit_and_run', 'forward'), 'random_walk', 'method',
                  'must be ''hit_and_run'' or ''forward'', got ' || coalesce('''' || method::VARCHAR || '''', 'NULL'))
   AND anon_check(lower IS NOT NULL AND NOT coalesce(anon_is_numeric(lower) AND NOT anon_is_temporal(lower)
                                                     AND isfinite(try_cast(lower AS DOUBLE)), false),
                  'random_walk', 'lower', 'must be a number or NULL, got ' || coalesce(lower::VARCHAR, 'NULL'))
   AND anon_check(upper IS NOT NULL AND NOT coalesce(anon_is_numeric(upper) AND NOT anon_is_temporal(upper)
                                                     AND isfinite(try_cast(upper AS DOUBLE)), false),
                  'random_walk', 'upper', 'must be a number or NULL, got ' || coalesce(upper::VARCHAR, 'NULL'))
   AND anon_check(try_cast(lower AS DOUBLE) > try_cast(upper AS DOUBLE), 'random_walk', 'lower', 'is above upper') AS ok
FROM anon_column_checks('random_walk', table_name, column_name, group_by) c,
     anon_require_columns('random_walk', 'locality_table', locality_table, anon_locality_columns()) l;

CREATE OR REPLACE MACRO anon_random_walk_values(table_name, column_name, locality_table, iterations, seed, lower,
                                                upper, method, segment_size, group_by, bounds, radius) AS TABLE
WITH
first_checks AS (SELECT ok FROM anon_walk_checks(table_name, column_name, locality_table, iterations, seed, lower,
                                                 upper, method, segment_size, group_by, bounds, radius)),
seg AS MATERIALIZED (
    SELECT s.*, row_number() OVER (ORDER BY segment, pos) - 1 AS g
    FROM anon_segments(table_name, column_name, anon_locality_segment_size(locality_table, segment_size), group_by) s,
         first_checks WHERE first_checks.ok),
domain AS (
    SELECT coalesce(try_cast(lower AS DOUBLE), min(value)) AS lo, coalesce(try_cast(upper AS DOUBLE), max(value)) AS hi,
           min(value) AS vmin, max(value) AS vmax, coalesce(stddev_pop(value), 0) AS sd FROM seg),
loc AS (  -- the locality table, matched to the segments; a row that does not match is an error
    SELECT l.relation, si.g AS gi, sj.g AS gj, sk.g AS gk,
           si.g IS NULL OR sj.g IS NULL OR sk.g IS NULL
           OR si.value <> l.d_i OR sj.value <> l.d_j OR sk.value <> l.d_k AS mismatch
    FROM anon_locality_rows(locality_table) l
    LEFT JOIN seg si ON si.segment = l.segment AND si.pos = l.i AND si.row_id = l.i_row
    LEFT JOIN seg sj ON sj.segment = l.segment AND sj.pos = l.j AND sj.row_id = l.j_row
    LEFT JOIN seg sk ON sk.segment = l.segment AND sk.pos = l.k AND sk.row_id = l.k_row),
checks AS (
    SELECT anon_check(d.lo > d.vmin OR d.hi < d.vmax, 'random_walk', 'lower',
                      'and upper must contain every value of the column (' || d.vmin::VARCHAR || ' to ' || d.vmax::VARCHAR || ')')
       AND anon_check((SELECT count(*) FILTER (mismatch) FROM loc) > 0, 'random_walk', 'locality_table',
                      'does not match column ''' || column_name || ''' (segment_size '
                      || anon_locality_segment_size(locality_table, segment_size)::VARCHAR
                      || '): ' || (SELECT count(*) FILTER (mismatch) FROM loc)::VARCHAR || ' constraints name other rows or values') AS ok
    FROM domain d),
segment_edges AS (  -- 'segment': up to the midpoints between each segment's edge values and its neighbours'
                    -- (same group), so no two segments' ranges overlap and the column keeps its order
    SELECT segment, coalesce((lag(smax) OVER w + smin) / 2, d.lo) AS slo, coalesce((smax + lead(smin) OVER w) / 2, d.hi) AS shi
    FROM (SELECT segment, any_value(grp) AS grp, min(value) AS smin, max(value) AS smax FROM seg GROUP BY segment), domain d
    WINDOW w AS (PARTITION BY grp ORDER BY segment)),
boxes AS (  -- one box per value
    SELECT s.g, s.value, s.pos,
           CASE bounds WHEN 'radius' THEN greatest(s.value - try_cast(radius AS DOUBLE) * d.sd, d.lo)
                       WHEN 'segment' THEN e.slo ELSE d.lo END AS lo,
           CASE bounds WHEN 'radius' THEN least(s.value + try_cast(radius AS DOUBLE) * d.sd, d.hi)
                       WHEN 'segment' THEN e.shi ELSE d.hi END AS hi
    FROM seg s JOIN segment_edges e USING (segment), domain d),
points AS (SELECT list(value ORDER BY g) AS x, list(g ORDER BY g) FILTER (WHERE pos = 1) AS starts,
                  list(lo ORDER BY g) AS lows, list(hi ORDER BY g) AS highs FROM boxes),
constraints AS (  -- one aggregate with one ORDER BY, so the four lists stay aligned
    SELECT coalesce(list(gi ORDER BY gi, gj, gk, relation), []) AS ci,
           coalesce(list(gj ORDER BY gi, gj, gk, relation), []) AS cj,
           coalesce(list(gk ORDER BY gi, gj, gk, relation), []) AS ck,
           coalesce(list(relation = '<=' ORDER BY gi, gj, gk, relation), []) AS le
    FROM loc),
walked AS (
    SELECT anon_random_walk(p.x, p.starts, c.ci, c.cj, c.ck, c.le, p.lows, p.highs, try_cast(iterations AS BIGINT),
                            try_cast(seed AS BIGINT), try_cast(method AS VARCHAR)) AS y
    FROM points p, constraints c, checks WHERE checks.ok)
SELECT s.row_id AS __anon_walk_row, w.y[s.g + 1] AS __anon_walked FROM seg s, walked w
UNION ALL BY NAME  -- the first checks as a branch of their own, so that they run on an empty table too
SELECT NULL AS __anon_walk_row FROM first_checks WHERE NOT ok;

-- The column is picked with COLUMNS(lambda ...) beside a sentinel column, so that a missing column is
-- reported by the checks rather than failing to bind; the empty first branch restores the source's
-- column order (UNION ALL BY NAME keeps the first branch's order). Columns of a reserved name are the
-- macros' own (row numbers, the sentinel, the walked values): a source holding one is refused by
-- anon_column_checks, so none of the user's is left out.
CREATE OR REPLACE MACRO random_walk(table_name, column_name, locality_table, iterations := 1000, seed := 0,
                                    lower := NULL, upper := NULL, method := 'hit_and_run', segment_size := NULL,
                                    group_by := NULL, bounds := 'radius', radius := 0.5) AS TABLE
SELECT * EXCLUDE (__anon_none) FROM (
    (SELECT nullif(NULL, COLUMNS(*)), NULL AS __anon_none
     FROM query_table(anon_after(anon_needs_python('random_walk'), anon_source_arg('random_walk', table_name, column_name))) LIMIT 0)
    UNION ALL BY NAME
    (SELECT COLUMNS(lambda c: lower(c) <> lower(column_name::VARCHAR) AND NOT anon_reserved_name(c)),
            CASE WHEN COLUMNS(lambda c: c = '__anon_none' OR lower(c) = lower(column_name::VARCHAR)) IS NULL THEN NULL
                 ELSE w.__anon_walked END
     FROM (SELECT NULL AS __anon_none, * FROM anon_numbered(anon_source_arg('random_walk', table_name, column_name))) r
     LEFT JOIN anon_random_walk_values(anon_source_arg('random_walk', table_name, column_name), column_name,
                                       anon_name_arg('random_walk', 'locality_table', locality_table, 'table'),
                                       iterations, seed, lower, upper, method, segment_size, group_by, bounds, radius) w
            ON w.__anon_walk_row = r.__anon_row
     ORDER BY r.__anon_row));  -- source order, so row ids (scan positions) carry over to a stored release
