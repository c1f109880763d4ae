-- k^m-anonymity for one-to-many records (Terrovitis, Mamoulis, Kalnis, VLDB 2008): its measures, its
-- check and its SQL entry. The measures and the check are pure SQL. km_anonymity() NEEDS THE PYTHON
-- PACKAGE: the algorithm loops in Python over SQL it generates (duckdb_anon.km), registered by
-- duckdb_anon.install() as the UDF km_anonymity_needs_the_duckdb_anon_python_package (named so that the
-- error a plain DuckDB client gets says what is missing); a plain client can call every other function here.
--
-- A person's record is the set of their rows' items, an item being the tuple of the item columns' labels.

-- A hierarchy from a table of edges (value, parent), e.g. item -> genre, or genre -> super-genre: the rows
-- (leaf, path) that mondrian() and km_anonymize() take. Leaves are the values that are nobody's parent; a
-- path follows the parents up to a value that has none. When the tops differ (an item -> genre table),
-- they all get the root '*'. A value with two parents gives a leaf two paths, which the functions reading
-- the hierarchy reject.
CREATE OR REPLACE MACRO hierarchy_from_parents(table_name) AS TABLE
WITH RECURSIVE
checks AS (SELECT ok FROM anon_require_columns('hierarchy_from_parents', 'table_name', table_name, ['value', 'parent'])),
edges AS (SELECT DISTINCT value::VARCHAR AS value, parent::VARCHAR AS parent
          FROM anon_read(anon_after(anon_name_ok('hierarchy_from_parents', 'table_name', table_name), table_name),
                         ['value', 'parent'])
          WHERE value IS NOT NULL),
walk(leaf, path, node) AS (
    SELECT value, [value], value FROM edges WHERE value NOT IN (SELECT parent FROM edges WHERE parent IS NOT NULL)
    UNION ALL
    SELECT w.leaf, w.path || [e.parent], e.parent
    FROM walk w JOIN edges e ON e.value = w.node
    WHERE e.parent IS NOT NULL AND NOT list_contains(w.path, e.parent)),
complete AS (  -- paths that reached a value without a parent
    SELECT DISTINCT leaf, path FROM walk w
    WHERE NOT EXISTS (SELECT 1 FROM edges e WHERE e.value = w.node AND e.parent IS NOT NULL AND NOT list_contains(w.path, e.parent))),
tops AS (SELECT count(DISTINCT path[-1]) AS n FROM complete)
SELECT leaf, path FROM (SELECT leaf, CASE WHEN tops.n > 1 THEN path || ['*'] ELSE path END AS path
                       FROM complete, tops, checks WHERE checks.ok ORDER BY leaf)
UNION ALL  -- the checks as a branch of their own, so that they run when there are no edges (never a row)
SELECT NULL, NULL FROM checks WHERE NOT ok;

-- A release's records as (person as text, label tuple as text): one row per distinct item of a person.
CREATE OR REPLACE MACRO anon_km_records(release_table, person, items) AS TABLE
SELECT DISTINCT p, to_json(list_value(*COLUMNS(items))) AS g
FROM (SELECT COLUMNS([person])::VARCHAR AS p, COLUMNS(items)::VARCHAR FROM query_table(release_table));

-- One row: the smallest number of people holding an itemset of up to m items (m from 1 to 3) that some
-- released record holds (min_support), and how many such itemsets fewer than k people hold (rare_itemsets).
-- The release is k^m-anonymous when rare_itemsets is 0. Counting pairs and triples costs the sum over
-- people of their distinct items squared (cubed).
CREATE OR REPLACE MACRO km_check(release_table, person, items, k, m) AS TABLE
WITH
rec AS MATERIALIZED (  -- the arguments are checked when the table name is bound
    SELECT p, dense_rank() OVER (ORDER BY g) AS gid
    FROM anon_km_records(anon_after(anon_name_ok('km_check', 'release_table', release_table)
                                    AND anon_name_ok('km_check', 'person', person, 'a column name')
                                    AND anon_columns_ok('km_check', 'items', items)
                                    AND anon_number_ok('km_check', 'k', k, lo := 1, integer := true)
                                    AND anon_at_most('km_check', 'k', k, 'k')
                                    AND anon_number_ok('km_check', 'm', m, lo := 1, integer := true)
                                    AND anon_at_most('km_check', 'm', m, 'km_check_m'), release_table),
                         person, items)),
sets AS (
    SELECT count(*) AS n FROM rec GROUP BY gid
    UNION ALL
    SELECT count(*) FROM rec a JOIN rec b ON a.p = b.p AND a.gid < b.gid WHERE m >= 2 GROUP BY a.gid, b.gid
    UNION ALL
    SELECT count(*) FROM rec a JOIN rec b ON a.p = b.p AND a.gid < b.gid JOIN rec c ON c.p = a.p AND b.gid < c.gid
    WHERE m >= 3 GROUP BY a.gid, b.gid, c.gid)
SELECT min(n) AS min_support, count(*) FILTER (WHERE n < k) AS rare_itemsets FROM sets;

-- Per item column (its position col, 0-based) and released label: the share of the column's leaves the label
-- stands for, Terrovitis' NCP: 0 for a leaf (a value released as it is), leaves under the node / all leaves
-- for an inner node, 1 for the root. A column without a hierarchy has the leaves of the source's values
-- and the root '*'.
CREATE OR REPLACE MACRO anon_km_ncp(source_table, release_table, items, hierarchy_sql) AS TABLE
WITH
released AS (SELECT unnest(range(len(items))) AS col, unnest(list_value(*COLUMNS(items))) AS label
             FROM (SELECT COLUMNS(items)::VARCHAR FROM query_table(release_table))),
labels AS (SELECT col, label, count(*) AS n FROM released GROUP BY ALL),  -- label: NULL for a NULL value
hier AS (SELECT list_position(list_transform(items, lambda i: lower(i)), qi) - 1 AS col, leaf, path
         FROM anon_hierarchy_leaves('km_measures', hierarchy_sql)),
nodes AS (SELECT col, node, count(*) AS leaves FROM (SELECT col, unnest(path[2:]) AS node FROM hier) GROUP BY ALL),
sizes AS (SELECT col, count(*) AS leaves FROM hier GROUP BY col),
plain AS (SELECT col, count(DISTINCT v) AS leaves
          FROM (SELECT unnest(range(len(items))) AS col, unnest(list_value(*COLUMNS(items))) AS v
                FROM (SELECT COLUMNS(items)::VARCHAR FROM query_table(source_table)))
          WHERE col NOT IN (SELECT col FROM sizes) GROUP BY col)
SELECT l.col, l.label, l.n,
       CASE WHEN l.col IN (SELECT col FROM sizes)
            THEN coalesce(nd.leaves / s.leaves, 0.0)
            ELSE CASE WHEN l.label = '*' AND (SELECT leaves FROM plain p WHERE p.col = l.col) > 1 THEN 1.0 ELSE 0.0 END END AS ncp
FROM labels l LEFT JOIN nodes nd ON nd.col = l.col AND nd.node = l.label LEFT JOIN sizes s ON s.col = l.col;

-- Per item column (col, 0-based) and distinct source value (as text; NULL is a value of its own), each label
-- that covers the value, with the number of leaves the label stands for: the value itself (1), an ancestor
-- on the column's hierarchy (its leaves), the root '*' (the hierarchy's leaves, else the column's distinct
-- source values). The one home of how a released label is read back: km_measures shares a label's rows
-- evenly among its leaves, for item popularity and for pair supports.
CREATE OR REPLACE MACRO anon_km_covers(source_table, items, hierarchy_sql) AS TABLE
WITH
source_values AS (
    SELECT DISTINCT col, v
    FROM (SELECT unnest(range(len(items))) AS col, unnest(list_value(*COLUMNS(items))) AS v
          FROM (SELECT COLUMNS(items)::VARCHAR FROM query_table(source_table)))),
ancestors AS (SELECT list_position(list_transform(items, lambda i: lower(i)), qi) - 1 AS col, leaf,
                     unnest(path[2:]) AS node
              FROM anon_hierarchy_leaves('km_measures', hierarchy_sql)),
node_leaves AS (SELECT col, node, count(*) AS leaves FROM ancestors GROUP BY ALL),
root_leaves AS (SELECT s.col, coalesce(any_value(nl.leaves), count(*)) AS leaves
                FROM source_values s LEFT JOIN node_leaves nl ON nl.col = s.col AND nl.node = '*' GROUP BY s.col)
SELECT col, v AS value, v AS label, 1 AS leaves FROM source_values
UNION ALL
SELECT s.col, s.v, '*', r.leaves FROM source_values s JOIN root_leaves r USING (col)
UNION ALL
SELECT s.col, s.v, a.node, nl.leaves
FROM source_values s JOIN ancestors a ON a.col = s.col AND a.leaf = s.v
JOIN node_leaves nl ON nl.col = a.col AND nl.node = a.node
WHERE a.node <> '*';

-- The relative error of pair supports (Terrovitis et al.'s measure for releases of itemsets): over the
-- source's 100 most frequent pairs of items (an item: the tuple of the `items` columns, written as JSON;
-- pairs of the 300 most frequent items; ties broken by that text, so that data where every pair is held
-- once still gives 100 pairs), the mean of |true - estimated| / true support, the
-- support being the people whose record holds both. The estimate is what an analyst reads from the
-- release: a released label tuple covering an item (each column's label the value, an ancestor on its
-- hierarchy, or the root '*') stands for each of the tuples of leaves it covers with equal chance, 1 over
-- their number; a person holds the item with the sum of those chances over their labels (at most 1), and a
-- pair with the product. 0: the release keeps the pairs' supports; 1: it keeps none of them. One row, a
-- NULL error when the source holds no pair. The release is read by its `person` column.
CREATE OR REPLACE MACRO anon_km_pair_error(source_table, release_table, items, person, hierarchy_sql) AS TABLE
WITH
src AS MATERIALIZED (
    SELECT DISTINCT p, to_json(list_value(*COLUMNS(items))) AS a, list_value(*COLUMNS(items)) AS v
    FROM (SELECT COLUMNS([person])::VARCHAR AS p, COLUMNS(items)::VARCHAR FROM anon_read(source_table, [person] || items))
    WHERE p IS NOT NULL),
frequent AS (SELECT a FROM src GROUP BY a QUALIFY row_number() OVER (ORDER BY count(*) DESC, a) <= 300),
top_pairs AS MATERIALIZED (
    SELECT x.a AS a, y.a AS b, count(*) AS n
    FROM (SELECT * FROM src WHERE a IN (SELECT a FROM frequent)) x
    JOIN (SELECT * FROM src WHERE a IN (SELECT a FROM frequent)) y ON x.p = y.p AND x.a < y.a
    GROUP BY x.a, y.a QUALIFY row_number() OVER (ORDER BY count(*) DESC, x.a, y.a) <= 100),
top_items AS (SELECT DISTINCT a, v FROM src WHERE a IN (SELECT a FROM top_pairs UNION SELECT b FROM top_pairs)),
item_columns AS (SELECT t.a, c.col, t.v[c.col + 1] AS value FROM top_items t, (SELECT unnest(range(len(items))) AS col) c),
covers AS (  -- (item, column, a label covering the item's value there, the leaves it stands for)
    SELECT i.a, i.col, c.label, c.leaves
    FROM item_columns i JOIN anon_km_covers(source_table, items, hierarchy_sql) c
         ON c.col = i.col AND c.value IS NOT DISTINCT FROM i.value),
released AS MATERIALIZED (  -- each person's distinct label tuples
    SELECT DISTINCT p, to_json(list_value(*COLUMNS(items))) AS g, list_value(*COLUMNS(items)) AS labels
    FROM (SELECT COLUMNS([person])::VARCHAR AS p, COLUMNS(items)::VARCHAR FROM anon_read(release_table, [person] || items))
    WHERE p IS NOT NULL),
tuples AS MATERIALIZED (  -- the distinct label tuples, far fewer than the rows: each item's chance is worked out once per tuple
    SELECT row_number() OVER (ORDER BY g) AS tid, g, any_value(labels) AS labels FROM released GROUP BY g),
candidates AS (  -- (top item, label tuple) where the first column's label covers the item's value
    SELECT c.a, t.tid, c.leaves FROM tuples t JOIN covers c ON c.col = 0 AND c.label IS NOT DISTINCT FROM t.labels[1]),
tuple_columns AS (SELECT tid, unnest(range(1, len(items))) AS col, unnest(labels[2:]) AS label FROM tuples),
tuple_chances AS (  -- the other columns must cover the item too
    SELECT x.a, x.tid, exp(-ln(any_value(x.leaves)) - coalesce(sum(ln(c.leaves)), 0)) AS chance
    FROM candidates x
    LEFT JOIN tuple_columns tc ON tc.tid = x.tid
    LEFT JOIN covers c ON c.a = x.a AND c.col = tc.col AND c.label IS NOT DISTINCT FROM tc.label
    GROUP BY x.a, x.tid HAVING count(c.col) = len(items) - 1),
chances AS (  -- per person and top item, the chance their record holds it
    SELECT x.a, r.p, least(1.0, sum(x.chance)) AS chance
    FROM released r JOIN tuples t USING (g) JOIN tuple_chances x ON x.tid = t.tid
    GROUP BY x.a, r.p),
estimated AS (
    SELECT t.a, t.b, any_value(t.n) AS n, coalesce(sum(x.chance * y.chance), 0) AS est
    FROM top_pairs t LEFT JOIN chances x ON x.a = t.a LEFT JOIN chances y ON y.a = t.b AND y.p = x.p
    GROUP BY t.a, t.b)
SELECT avg(abs(n - est) / n) AS pair_support_error FROM estimated;

-- One row of what a k^m release lost against its source:
--   information_loss  Terrovitis' NCP per row (the mean over the item columns), a suppressed row counting 1,
--                     averaged over the source's rows (0: nothing lost, 1: nothing left);
--   rows_suppressed   share of the source's rows missing from the release;
--   items_suppressed  share of the distinct values of the first item column that no released label covers
--                     (neither the value, nor one of its ancestors, nor the root '*');
--   popularity_spearman  Spearman's rank correlation, over those values, of their rows in the source and
--                     their released popularity: what an analyst reading the release assigns the value, its
--                     exact rows plus, for each released label covering it, the label's rows shared evenly
--                     among the label's leaves (a genre of 3 items released 30 times gives each 10). Ties
--                     take their mean rank; NULL when either side is constant (say, every value released
--                     as the root).
--   top100_kept       the share of the first item column's 100 most frequent source values (all of them
--                     when there are fewer; with the values tied at the 100th place: T of them) that the
--                     released popularity also puts among its T most popular whatever order its ties take:
--                     a value tied with others across that place, or released nowhere, is not kept;
--   exact_rows        per item column (a MAP from its name): the share of the source's rows whose value a
--                     released row shows exactly (a label that is one of the column's source values);
--   pair_support_error  anon_km_pair_error's, the records read by the `person` column of both tables
--                     (NULL when person is NULL).
-- km_measures() checks the arguments and passes them on.
CREATE OR REPLACE MACRO anon_km_measures(source_table, release_table, items, hierarchies, person) AS TABLE
WITH
ncp AS (SELECT * FROM anon_km_ncp(source_table, release_table, items,
                                  anon_hierarchy_sql('km_measures', hierarchies, items))),
counts AS (SELECT (SELECT count(*) FROM query_table(source_table)) AS source_rows,
                  (SELECT count(*) FROM query_table(release_table)) AS release_rows),
first_before AS (SELECT COLUMNS([items[1]])::VARCHAR AS v, count(*) AS n FROM query_table(source_table) GROUP BY ALL),
first_after AS (SELECT label AS v, n FROM ncp WHERE col = 0),
label_covers AS MATERIALIZED (
    SELECT * FROM anon_km_covers(source_table, items, anon_hierarchy_sql('km_measures', hierarchies, items))),
covers AS (  -- (source value, its share of the rows of a released label covering it)
    SELECT c.value AS v, g.n / c.leaves AS n
    FROM label_covers c JOIN first_after g ON g.v IS NOT DISTINCT FROM c.label WHERE c.col = 0),
covered AS (
    SELECT b.v, b.n, coalesce(sum(c.n), 0) AS kept, coalesce(sum(c.n), 0) > 0 AS covered
    FROM first_before b LEFT JOIN covers c ON c.v IS NOT DISTINCT FROM b.v GROUP BY b.v, b.n),
ranked AS (
    SELECT (rank() OVER (ORDER BY n) + rank() OVER (ORDER BY n) + count(*) OVER (PARTITION BY n) - 1) / 2.0 AS before_rank,
           (rank() OVER (ORDER BY kept) + rank() OVER (ORDER BY kept) + count(*) OVER (PARTITION BY kept) - 1) / 2.0 AS after_rank,
           -- values more frequent in the source; values at least as popular in the release (itself included)
           rank() OVER (ORDER BY n DESC) - 1 AS above,
           rank() OVER (ORDER BY kept DESC) - 1 + count(*) OVER (PARTITION BY kept) AS at_least,
           least(100, count(*) OVER ()) AS top, kept
    FROM covered),
exact AS (  -- per item column, the released rows showing a source value exactly (a label that is a value)
    SELECT c.col, coalesce(sum(l.n) FILTER (WHERE sv.col IS NOT NULL), 0) AS n
    FROM (SELECT unnest(range(len(items))) AS col) c
    LEFT JOIN ncp l ON l.col = c.col
    LEFT JOIN (SELECT col, value FROM label_covers WHERE label IS NOT DISTINCT FROM value) sv
         ON sv.col = l.col AND sv.value IS NOT DISTINCT FROM l.label
    GROUP BY c.col)
SELECT ((SELECT coalesce(sum(n * ncp), 0) FROM ncp) / len(items) + (c.source_rows - c.release_rows)) / nullif(c.source_rows, 0)
           AS information_loss,
       (c.source_rows - c.release_rows) / nullif(c.source_rows, 0) AS rows_suppressed,
       (SELECT count(*) FILTER (WHERE NOT covered) / nullif(count(*), 0) FROM covered) AS items_suppressed,
       (SELECT CASE WHEN NOT isnan(r) THEN r END FROM (SELECT corr(before_rank, after_rank) AS r FROM ranked)) AS popularity_spearman,
       (SELECT count(*) FILTER (WHERE at_least <= size AND kept > 0) / nullif(any_value(size), 0)
        FROM (SELECT *, count(*) OVER () AS size FROM ranked WHERE above < top)) AS top100_kept,
       (SELECT map_from_entries(list({'key': items[col + 1], 'value': n / nullif(c.source_rows, 0)} ORDER BY col))
        FROM exact) AS exact_rows,
       (SELECT pair_support_error  -- read by the person column; NULL without one (the branch is then dropped)
        FROM anon_km_pair_error(source_table, release_table, items, coalesce(try_cast(person AS VARCHAR), items[1]),
                                anon_hierarchy_sql('km_measures', hierarchies, items))
        WHERE person IS NOT NULL
          AND (SELECT ok FROM anon_require_columns('km_measures', 'person', source_table, [person]))
          AND (SELECT ok FROM anon_require_columns('km_measures', 'person', release_table, [person],
                                                  table_arg := 'release_table'))) AS pair_support_error
FROM counts c;

CREATE OR REPLACE MACRO km_measures(source_table, release_table, items, hierarchies := NULL, person := NULL) AS TABLE
SELECT * FROM anon_km_measures(
    anon_after(anon_name_ok('km_measures', 'source_table', source_table) AND anon_columns_ok('km_measures', 'items', items)
               AND (person IS NULL OR anon_name_ok('km_measures', 'person', person, 'a column name')), source_table),
    anon_after(anon_name_ok('km_measures', 'release_table', release_table), release_table), items, hierarchies, person);

-- km_anonymity(table_name, items, k, m, person := NULL, hierarchies := NULL, keep := NULL, seed := 0,
-- person_output := 'pseudonym', key_name := NULL, release_name := NULL): the release
-- duckdb_anon.km.km_anonymize() writes, as rows. The person column is a per-release pseudonym under the
-- pseudonym key key_name (SET VARIABLE duckdb_anon_key_<key_name>), of release release_name (NULL: one
-- derived from the other arguments, so the same call gives the same pseudonyms and another call other
-- ones); person_output := 'drop' leaves it out, 'raw' publishes the ids as they are (a risk the caller takes). The UDF runs it when the query is bound, on a
-- cursor of the same database (so it sees committed data), and stages the release in a Parquet file of the
-- Python process's temporary directory (removed when the process exits), which the query reads.
CREATE OR REPLACE MACRO km_anonymity(table_name, items, k, m, person := NULL, hierarchies := NULL, keep := NULL,
                                     seed := 0, person_output := 'pseudonym', key_name := NULL,
                                     release_name := NULL) AS TABLE
SELECT * FROM read_parquet(km_anonymity_needs_the_duckdb_anon_python_package(
    CASE WHEN typeof(table_name) = 'VARCHAR' THEN table_name::VARCHAR
         ELSE error('km_anonymity(): argument ''table_name'' must be a table name, got ' || anon_shown(table_name)) END,
    CASE WHEN typeof(items) IN ('VARCHAR[]') THEN items::VARCHAR[]
         ELSE error('km_anonymity(): argument ''items'' must be a list of column names, got ' || anon_shown(items)) END,
    CASE WHEN regexp_matches(typeof(k), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') THEN k::BIGINT
         ELSE error('km_anonymity(): argument ''k'' must be an integer >= 1, got ' || anon_shown(k)) END,
    CASE WHEN regexp_matches(typeof(m), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') THEN m::BIGINT
         ELSE error('km_anonymity(): argument ''m'' must be an integer >= 1, got ' || anon_shown(m)) END,
    person::VARCHAR,
    CASE WHEN hierarchies IS NULL THEN NULL
         WHEN typeof(hierarchies) LIKE 'STRUCT(%' OR typeof(hierarchies) LIKE 'MAP(%' THEN to_json(hierarchies)::VARCHAR
         ELSE error('km_anonymity(): argument ''hierarchies'' must be a STRUCT or MAP of item column -> hierarchy table name') END,
    CASE WHEN keep IS NULL THEN NULL WHEN typeof(keep) IN ('VARCHAR[]', '"NULL"[]') THEN keep::VARCHAR[]
         ELSE error('km_anonymity(): argument ''keep'' must be a list of column names, got ' || anon_shown(keep)) END,
    CASE WHEN regexp_matches(typeof(seed), '^U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?$') THEN seed::BIGINT
         ELSE error('km_anonymity(): argument ''seed'' must be an integer >= 0, got ' || anon_shown(seed)) END,
    person_output::VARCHAR, key_name::VARCHAR, release_name::VARCHAR,
    -- the key itself: session variables are the caller's, and the UDF runs on a cursor of its own
    CASE WHEN key_name IS NOT NULL THEN getvariable('duckdb_anon_key_' || key_name::VARCHAR)::VARCHAR END));
