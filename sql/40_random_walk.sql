-- random_walk(): the release of pattern-preserving anonymization. NEEDS THE PYTHON PACKAGE: the walk is the
-- numpy kernel duckdb_anon.walk, registered by duckdb_anon.install() as the UDF anon_random_walk. A plain
-- DuckDB client that opens the file can call every other function, but not this one.
--
-- random_walk(table_name, column_name, locality_table, iterations := 4000, seed := 0, lower := NULL,
--             upper := NULL, method := 'hit_and_run', segment_size := 100, group_by := NULL,
--             bounds := 'domain')
-- Every source row and column; the column is replaced by its walked values (DOUBLE), which satisfy every
-- constraint of locality_table, the order within each segment, and lower <= x <= upper (default: the
-- column's min and max). bounds := 'segment' instead keeps each segment between its neighbours' edge
-- values, so the whole column keeps its order. NULLs stay NULL. segment_size and group_by must be those the locality table was
-- made with; a table that does not match the column's segments is an error.

CREATE OR REPLACE MACRO anon_random_walk_values(table_name, column_name, locality_table, iterations, seed, lower,
                                                upper, method, segment_size, group_by, bounds) AS TABLE
WITH
seg AS MATERIALIZED (
    SELECT *, row_number() OVER (ORDER BY segment, pos) - 1 AS g
    FROM anon_segments(table_name, column_name, segment_size, group_by)),
domain AS (
    SELECT coalesce(lower::DOUBLE, min(value)) AS lo, coalesce(upper::DOUBLE, max(value)) AS hi,
           min(value) AS vmin, max(value) AS vmax FROM seg),
loc AS (  -- the locality table, matched to the segments; a row that does not match is an error
    SELECT l.relation, si.g AS gi, sj.g AS gj, sk.g AS gk,
           si.g IS NULL OR sj.g IS NULL OR sk.g IS NULL
           OR si.value <> l.d_i OR sj.value <> l.d_j OR sk.value <> l.d_k AS mismatch
    FROM query_table(locality_table) l
    LEFT JOIN seg si ON si.segment = l.segment AND si.pos = l.i AND si.row_id = l.i_row
    LEFT JOIN seg sj ON sj.segment = l.segment AND sj.pos = l.j AND sj.row_id = l.j_row
    LEFT JOIN seg sk ON sk.segment = l.segment AND sk.pos = l.k AND sk.row_id = l.k_row),
checks AS (
    SELECT anon_check(NOT regexp_matches(typeof(iterations), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') OR iterations < 0,
                      'random_walk', 'iterations', 'must be an integer >= 0, got ' || coalesce(iterations::VARCHAR, 'NULL'))
       AND anon_check(NOT regexp_matches(typeof(seed), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') OR seed < 0,
                      'random_walk', 'seed', 'must be an integer >= 0, got ' || coalesce(seed::VARCHAR, 'NULL'))
       AND anon_check(bounds IS NULL OR bounds NOT IN ('domain', 'segment'), 'random_walk', 'bounds',
                      'must be ''domain'' or ''segment'', got ' || coalesce('''' || bounds || '''', 'NULL'))
       AND anon_check(method IS NULL OR method NOT IN ('hit_and_run', 'forward'), 'random_walk', 'method',
                      'must be ''hit_and_run'' or ''forward'', got ' || coalesce('''' || method || '''', 'NULL'))
       AND anon_check(d.lo > d.hi, 'random_walk', 'lower', 'is above upper')
       AND anon_check(d.lo > d.vmin OR d.hi < d.vmax, 'random_walk', 'lower',
                      'and upper must contain every value of the column (' || d.vmin::VARCHAR || ' to ' || d.vmax::VARCHAR || ')')
       AND anon_check((SELECT count(*) FILTER (mismatch) FROM loc) > 0, 'random_walk', 'locality_table',
                      'does not match column ''' || column_name || ''' (segment_size ' || segment_size::VARCHAR
                      || '): ' || (SELECT count(*) FILTER (mismatch) FROM loc)::VARCHAR || ' constraints name other rows or values') AS ok
    FROM domain d),
segment_bounds AS (  -- 'segment': between the neighbouring segments' edge values (same group), so every
                    -- value keeps its rank in the whole column; 'domain': lower and upper for all
    SELECT segment,
           CASE WHEN bounds = 'segment' THEN coalesce(lag(smax) OVER w, d.lo) ELSE d.lo END AS slo,
           CASE WHEN bounds = 'segment' THEN coalesce(lead(smin) OVER w, d.hi) ELSE d.hi END AS shi
    FROM (SELECT segment, any_value(grp) AS grp, min(value) AS smin, max(value) AS smax FROM seg GROUP BY segment), domain d
    WINDOW w AS (PARTITION BY grp ORDER BY segment)),
points AS (SELECT list(value ORDER BY g) AS x, list(g ORDER BY g) FILTER (WHERE pos = 1) AS starts FROM seg),
limits AS (SELECT list(slo ORDER BY segment) AS lows, list(shi ORDER BY segment) AS highs FROM segment_bounds),
constraints AS (  -- one aggregate with one ORDER BY, so the four lists stay aligned
    SELECT coalesce(list(gi ORDER BY gi, gj, gk, relation), []) AS ci,
           coalesce(list(gj ORDER BY gi, gj, gk, relation), []) AS cj,
           coalesce(list(gk ORDER BY gi, gj, gk, relation), []) AS ck,
           coalesce(list(relation = '<=' ORDER BY gi, gj, gk, relation), []) AS le
    FROM loc),
walked AS (
    SELECT anon_random_walk(p.x, p.starts, c.ci, c.cj, c.ck, c.le, b.lows, b.highs, iterations, seed, method) AS y
    FROM points p, constraints c, limits b, checks WHERE checks.ok)
SELECT s.row_id AS __anon_walk_row, w.y[s.g + 1] AS __anon_walked FROM seg s, walked w;

CREATE OR REPLACE MACRO random_walk(table_name, column_name, locality_table, iterations := 4000, seed := 0,
                                    lower := NULL, upper := NULL, method := 'hit_and_run', segment_size := 100,
                                    group_by := NULL, bounds := 'domain') AS TABLE
(SELECT nullif(NULL, COLUMNS(*)) FROM query_table(table_name) LIMIT 0)
UNION ALL BY NAME
(SELECT COLUMNS(lambda c: c <> column_name AND NOT starts_with(c, '__anon_')),
        CASE WHEN COLUMNS([column_name]) IS NULL THEN NULL ELSE w.__anon_walked END
 FROM anon_numbered(table_name) r
 LEFT JOIN anon_random_walk_values(table_name, column_name, locality_table, iterations, seed, lower, upper, method,
                                   segment_size, group_by, bounds) w ON w.__anon_walk_row = r.__anon_row
 ORDER BY r.__anon_row);  -- source order, so row ids (scan positions) carry over to a stored release
