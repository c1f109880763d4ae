-- Re-identification in sparse micro-data: the Scoreboard-RH attack of Narayanan and Shmatikov (IEEE S&P
-- 2008), and a seeded generator of ratings-like data to try it on. Pure SQL, set-based.

-- Synthetic sparse data in long form (record_id, item, value, ts): per-user activity exponential with mean
-- ratings_per_user, item popularity a power law (item = floor(items * U^3): low ids popular), ratings 1..5,
-- dates over six years from 2000-01-01. Deterministic from seed.
CREATE OR REPLACE MACRO synthetic_ratings(users, items := 2000, ratings_per_user := 50, seed := 0) AS TABLE
WITH
u AS (SELECT range AS record_id,
             1 + floor(-ln(greatest(hash(seed, range, 'n')::DOUBLE / 18446744073709551616.0, 1e-12))
                       * (try_cast(ratings_per_user AS DOUBLE) - 1))::BIGINT AS n
      FROM range(anon_after(anon_number_ok('synthetic_ratings', 'users', users, lo := 1, integer := true)
                            AND anon_number_ok('synthetic_ratings', 'items', items, lo := 1, integer := true)
                            AND anon_number_ok('synthetic_ratings', 'ratings_per_user', ratings_per_user, lo := 1)
                            AND anon_number_ok('synthetic_ratings', 'seed', seed, integer := true)
                            AND anon_at_most('synthetic_ratings', 'users', users, 'synthetic_users')
                            AND anon_at_most('synthetic_ratings', 'ratings_per_user', ratings_per_user, 'synthetic_ratings_per_user')
                            AND anon_check(try_cast(users AS DOUBLE) * try_cast(ratings_per_user AS DOUBLE) > anon_limit('synthetic_rows'),
                                           'synthetic_ratings', 'users', 'times ratings_per_user (the expected rows) must be at most '
                                           || anon_limit('synthetic_rows')::VARCHAR || ' (a bound on the work they size), got '
                                           || anon_shown(users) || ' * ' || anon_shown(ratings_per_user)),
                            try_cast(users AS BIGINT)))),
draws AS (
    SELECT record_id,
           floor(try_cast(items AS BIGINT) * pow(hash(seed, record_id, j, 'i')::DOUBLE / 18446744073709551616.0, 3))::BIGINT AS item,
           1 + (hash(seed, record_id, j, 'v') % 5)::INTEGER AS value,
           DATE '2000-01-01' + (hash(seed, record_id, j, 'd') % 2190)::INTEGER AS ts
    FROM u, range(n) AS r(j))
SELECT DISTINCT ON (record_id, item) record_id, item, value, ts FROM draws ORDER BY record_id, item, ts;

-- A number in [0, 1) drawn from the hash h (a UBIGINT): the seeded generators' uniform draw. h is hashed
-- again: hash() of several values combines their hashes so simply that two draws differing only in a tag,
-- hash(seed, id, 'a') and hash(seed, id, 'b'), correlate (0.62 measured); hashing again makes them independent.
CREATE OR REPLACE MACRO anon_unit(h) AS hash(h)::DOUBLE / 18446744073709551616.0;

-- Ratings shaped like the public MovieLens 100K set (943 people, 100,000 ratings), in the
-- long form of synthetic_ratings (record_id, item, value, ts), deterministic from seed:
--   activity   20 + a log-normal number of ratings a person (median 65, mean about 85), at most 44 % of
--              the items and at most 2,000;
--   items      distinct within a record, drawn by Zipf-Mandelbrot popularity (density ~ (rank + 60)^-1.6:
--              a long tail of items few people rate); a popularity rank is an item id in a seeded order,
--              so neighbouring ids are no closer in popularity than any two (in real catalogues an id
--              says little of how often the item is rated);
--   ratings    1..5, skewed: 6, 11, 27, 34 and 21 %;
--   dates      214 days from 1997-09-20, in bursts: a person rates in 1 + ln(ratings) sessions, most
--              ratings in the first, the later ones days to weeks apart.
-- Items are drawn with replacement and repeats dropped, from enough draws that a record comes out at its
-- drawn size but for the heaviest raters of small item sets.
CREATE OR REPLACE MACRO realistic_ratings(users, items := 1682, seed := 0) AS TABLE
WITH
people AS (
    SELECT range AS record_id,
           greatest(1, least(floor(0.44 * try_cast(items AS BIGINT)), 2000,
                             20 + floor(45 * exp(0.9 * sqrt(-2 * ln(greatest(anon_unit(hash(seed, range, 'z1')), 1e-12)))
                                                     * cos(2 * pi() * anon_unit(hash(seed, range, 'z2')))))))::BIGINT AS n,
           floor(214 * anon_unit(hash(seed, range, 'first')))::INTEGER AS first_day
    FROM range(anon_after(anon_number_ok('realistic_ratings', 'users', users, lo := 1, integer := true)
                          AND anon_number_ok('realistic_ratings', 'items', items, lo := 1, integer := true)
                          AND anon_number_ok('realistic_ratings', 'seed', seed, integer := true)
                          AND anon_at_most('realistic_ratings', 'items', items, 'synthetic_items')
                          AND anon_check(try_cast(users AS DOUBLE) * 85 > anon_limit('synthetic_rows'),
                                         'realistic_ratings', 'users', 'times 85 (the expected ratings a person) must be at most '
                                         || anon_limit('synthetic_rows')::VARCHAR || ' (a bound on the work it sizes), got '
                                         || anon_shown(users)),
                          try_cast(users AS BIGINT)))),
ids AS (SELECT range AS popularity_rank, row_number() OVER (ORDER BY hash(seed, range, 'id'), range) - 1 AS item
        FROM range(try_cast(items AS BIGINT))),
ranks AS (  -- the inverse of the popularity's distribution function at a uniform draw
    SELECT record_id, n, first_day, j,
           least(try_cast(items AS BIGINT) - 1,
                 floor(pow(pow(60, -0.6) + anon_unit(hash(seed, record_id, j, 'i'))
                                           * (pow(try_cast(items AS BIGINT) + 60, -0.6) - pow(60, -0.6)), -1 / 0.6) - 60))::BIGINT AS popularity_rank
    FROM people, range(2 * n + ceil(4 * n * n / try_cast(items AS BIGINT))::BIGINT + 10) AS r(j)),
draws AS (SELECT r.*, ids.item FROM ranks r JOIN ids USING (popularity_rank)),
firsts AS (SELECT record_id, any_value(n) AS n, any_value(first_day) AS first_day, item, min(j) AS j
           FROM draws GROUP BY record_id, item),
kept AS (
    SELECT *, floor((1 + ln(n)) * pow(anon_unit(hash(seed, record_id, item, 's')), 2))::INTEGER AS session,
           anon_unit(hash(seed, record_id, item, 'v')) AS u
    FROM firsts QUALIFY row_number() OVER (PARTITION BY record_id ORDER BY j) <= n)
SELECT record_id, item,
       CASE WHEN u < 0.06 THEN 1 WHEN u < 0.17 THEN 2 WHEN u < 0.44 THEN 3 WHEN u < 0.78 THEN 4 ELSE 5 END AS value,
       DATE '1997-09-20' + first_day
           + CASE WHEN session = 0 THEN 0
                  ELSE floor(-ln(greatest(anon_unit(hash(seed, record_id, session, 'd')), 1e-12)) * 21 * session)::INTEGER
                       % (214 - first_day) END AS ts
FROM kept ORDER BY record_id, item;

-- Scoreboard-RH. For every target of `aux_table` (target_id, item, value, ts: what the adversary knows) and
-- every record of `published_table` (record_id, item, value, ts) holding an item the target rated:
--   score = sum over the target's items of wt(i) * Sim, wt(i) = 1 / ln |supp(i)| (supp: rows holding
--   the item; at least 2), Sim = exp(-value gap / rho0) + exp(-days apart / d0) (the date term only where
--   both dates are known and use_dates).
-- The published item, value and ts may be raw, or generalized: mondrian()'s text labels ('3-7', '{a,b}',
-- '2001-01-01/2001-03-31') or typed bounds STRUCT(lo, hi, mean), read as 55_release_labels.sql says. A
-- row holds an item when its item label covers it (supp counts those rows: on raw data, the records
-- rating the item); the value and date gaps are 0 inside the released range and the distance to it
-- outside, so on raw data they are the plain differences. When several rows of a record hold one known
-- item, the best of them counts (summing them instead lets wide labels swamp the score: measured, 9 %
-- re-identified instead of 70 % on the test's k = 5 release).
-- Records holding none of the items score 0 and still count in sigma (the standard deviation of the
-- target's scores over all records) and in the entropy of Pi(r) ~ exp(score / sigma). One row per target:
-- the best record, its score and the runner-up's, sigma, eccentricity (best - second) / sigma, matched
-- (eccentricity >= phi) and entropy_bits; for deanonymize_evaluate also `records` (the release's) and
-- `top_candidates` (record_id, score of the records scoring at least the fifth-best positive score, ties
-- included), which deanonymize() leaves out. Scores are rounded to 1e-9: equal scores tie.
-- An aux table without targets gives no rows. `fn` names the user-facing function in error messages.

-- The scalar arguments of deanonymize and deanonymize_evaluate, checked when the query is bound.
CREATE OR REPLACE MACRO anon_deanonymize_args_ok(fn, published_table, aux_table, rho0, d0, phi, use_dates) AS
    anon_name_ok(fn, 'published_table', published_table)
    AND anon_name_ok(fn, 'aux_table', aux_table)
    AND anon_number_ok(fn, 'rho0', rho0, lo := 0, above := true)
    AND anon_number_ok(fn, 'd0', d0, lo := 0, above := true)
    AND anon_number_ok(fn, 'phi', phi, lo := 0)
    AND anon_bool_ok(fn, 'use_dates', use_dates);

CREATE OR REPLACE MACRO anon_deanonymize(fn, published_table, aux_table, rho0, d0, phi, use_dates, hierarchies) AS TABLE
WITH
args AS (SELECT ok FROM anon_arguments(anon_deanonymize_args_ok(fn, published_table, aux_table, rho0, d0, phi, use_dates))),
checks AS (  -- the aux values must be numbers, its dates dates (or all NULL)
    SELECT p.ok AND a.ok AND d.ok AS ok
    FROM anon_require_columns(fn, 'published_table', published_table, ['record_id', 'item', 'value', 'ts']) p,
         anon_require_columns(fn, 'aux_table', aux_table, ['target_id', 'item', 'value', 'ts'], typed := ['value'],
                              type_pattern := anon_number_types(), type_text := 'a number') a,
         anon_require_columns(fn, 'aux_table', aux_table, ['ts'], typed := ['ts'],
                              type_pattern := anon_temporal_types() || '|^"NULL"$', type_text := 'a DATE or TIMESTAMP') d),
published AS (  -- as released: labels are parsed once per distinct value below and joined back on it
    SELECT record_id, item AS il, value AS vl, ts AS tl
    FROM args, anon_read(published_table, ['record_id', 'item', 'value', 'ts'])),
aux AS MATERIALIZED (
    SELECT target_id, anon_value_read(item) AS i, try_cast(value AS DOUBLE) AS value, anon_numeric_key(try_cast(ts AS TIMESTAMP)) AS tx
    FROM args, anon_read(aux_table, ['target_id', 'item', 'value', 'ts'])),
item_kind AS (SELECT coalesce(any_value(i.kind), 'category') AS kind FROM aux),
item_labels AS (  -- distinct item labels, parsed; `point` is the key of a label that covers one value only
    SELECT il, b, CASE WHEN b.star OR b.null_ok OR b.clo IS NOT NULL THEN NULL
                       WHEN kind = 'category' THEN CASE WHEN len(b.elems) = 1 AND NOT b.text LIKE '{%}' THEN b.elems[1] END
                       WHEN b.lo = b.hi THEN b.lo::VARCHAR END AS point
    FROM (SELECT il, anon_label_read(to_json(il), kind) AS b, kind FROM (SELECT DISTINCT il FROM published), item_kind)),
aux_items AS (SELECT DISTINCT i.t AS t, i.x AS x, CASE WHEN i.kind = 'category' THEN i.t ELSE i.x::VARCHAR END AS point FROM aux),
item_paths AS (  -- the item's hierarchy, if given: a label naming a node on an item's path covers the item
    SELECT leaf, path FROM query(anon_hierarchy_sql(fn, hierarchies, ['item']))),
item_covers AS MATERIALIZED (  -- (aux item, item label) where the label covers the item: points by a join
    SELECT a.t, l.il FROM aux_items a JOIN item_labels l ON l.point = a.point
    UNION  -- once per pair
    SELECT a.t, l.il FROM aux_items a JOIN item_labels l ON l.point IS NULL AND anon_label_covers(l.b, a.t, a.x)
    UNION
    SELECT a.t, l.il FROM aux_items a JOIN item_paths h ON h.leaf = a.t JOIN item_labels l ON list_contains(h.path, l.il::VARCHAR)),
value_labels AS (  -- ranges of values and dates (the gaps below need no more than lo and hi)
    SELECT vl, b.lo AS lo, b.hi AS hi FROM (SELECT vl, anon_label_read(to_json(vl), 'numeric') AS b FROM (SELECT DISTINCT vl FROM published))),
ts_labels AS (  -- '*' covers every date: no gap, as for values (greatest() skips the NULL bounds)
    SELECT tl, b.lo AS lo, b.hi AS hi, b.star AS star FROM (SELECT tl, anon_label_read(to_json(tl), 'temporal') AS b FROM (SELECT DISTINCT tl FROM published))),
records AS (SELECT count(DISTINCT record_id) AS n FROM published),
weights AS (  -- per aux item: 1 / ln of the published rows holding it (on raw data, the records rating it)
    SELECT c.t, 1.0 / ln(greatest(sum(n), 2)) AS wt
    FROM item_covers c JOIN (SELECT il, count(*) AS n FROM published GROUP BY il) USING (il) GROUP BY c.t),
sims AS (  -- one row per (target, item, candidate record): the best of the record's rows holding the item
    SELECT a.target_id, p.record_id, c.t,
           max(exp(-greatest(v.lo - a.value, a.value - v.hi, 0) / try_cast(rho0 AS DOUBLE))
               + CASE WHEN use_dates AND a.tx IS NOT NULL AND (d.lo IS NOT NULL OR d.star)
                      THEN exp(-greatest(d.lo - a.tx, a.tx - d.hi, 0) / 86400e6 / try_cast(d0 AS DOUBLE))
                      ELSE 0 END) AS sim
    FROM aux a JOIN item_covers c ON c.t = a.i.t JOIN published p ON p.il = c.il
    LEFT JOIN value_labels v ON v.vl = p.vl
    LEFT JOIN ts_labels d ON d.tl = p.tl
    GROUP BY a.target_id, p.record_id, c.t),
scores AS (  -- one row per (target, candidate record)
    -- rounded to 1e-9, so that records scoring alike tie whatever order the threads add the terms in
    SELECT s.target_id, s.record_id, round(sum(w.wt * s.sim), 9) AS score
    FROM sims s JOIN weights w USING (t)
    GROUP BY s.target_id, s.record_id),
per_target AS (  -- aggregates, not a ranking window: sorting every target's candidates cost most of the time
    SELECT * EXCLUDE (top), top[1] AS best, coalesce(top[2], 0) AS second,  -- the runner-up may tie the best
           coalesce(top[5], 0) AS fifth
    FROM (SELECT target_id, count(*) AS candidates, sum(score) AS s1, sum(score * score) AS s2, max(score, 5) AS top,
                 arg_min(record_id, {'neg_score': -score, 'record_id': record_id}) AS best_record  -- ties: smallest id
          FROM scores GROUP BY target_id)),
stats AS (  -- sigma over all records (zeros included)
    SELECT t.*, sqrt(greatest(t.s2 / r.n - pow(t.s1 / r.n, 2), 0)) AS sigma, r.n FROM per_target t, records r),
entropy AS (  -- H(Pi) in bits, Pi(r) ~ exp(score / sigma); records scoring 0 contribute exp(0) = 1 each (none
              -- when sigma is 0). In the same pass over the scores, for deanonymize_evaluate's top-1 and top-5
              -- shares: the records scoring at least the fifth-best positive score, ties included (all positive
              -- scores when fewer than five)
    SELECT s.target_id,
           (ln(sum(exp(k.score / nullif(s.sigma, 0))) + (s.n - s.candidates))
            - sum(exp(k.score / nullif(s.sigma, 0)) * k.score / nullif(s.sigma, 0))
              / (sum(exp(k.score / nullif(s.sigma, 0))) + (s.n - s.candidates)))
           / ln(2) AS entropy_bits,
           list({'record_id': k.record_id, 'score': k.score}) FILTER (WHERE k.score > 0 AND k.score >= s.fifth) AS top_candidates
    FROM stats s JOIN scores k USING (target_id)
    GROUP BY s.target_id, s.n, s.candidates)
SELECT s.target_id, s.best_record, s.best AS score, s.second AS runner_up, s.sigma,
       CASE WHEN s.sigma > 0 THEN (s.best - s.second) / s.sigma END AS eccentricity,
       coalesce((s.best - s.second) / nullif(s.sigma, 0) >= try_cast(phi AS DOUBLE), false) AS matched,
       e.entropy_bits, s.n AS records, e.top_candidates
FROM stats s LEFT JOIN entropy e USING (target_id)
-- The checks as a branch of their own, so that they run even when there are no targets (never a row)
UNION ALL BY NAME
SELECT NULL AS target_id FROM checks WHERE NOT ok
ORDER BY target_id;

CREATE OR REPLACE MACRO deanonymize(published_table, aux_table, rho0 := 1.5, d0 := 30, phi := 1.5, use_dates := true,
                                     hierarchies := NULL) AS TABLE
SELECT * EXCLUDE (records, top_candidates) FROM anon_deanonymize('deanonymize', published_table, aux_table, rho0, d0, phi, use_dates,
                                                                 hierarchies);

-- Evaluation against ground truth (target_id, record_id; record_id NULL when the target is absent from the
-- release). Over present targets: reidentified = share matched to their own record (eccentricity >= phi);
-- top1_share = share whose best-scored record is their own, top5_share = share whose own record is among
-- the five best-scored. Neither needs a match to stand out: an adversary may act on the best guess alone.
-- Ties never flatter: when the own record ties with others, a target counts as the chance that a uniform
-- draw among the tied records puts it in the top 1 (1 / tied) or the top 5 (spare places / tied); records
-- scoring nothing tie at 0, so a target whose known items reach no record counts 1 / released_records.
-- Over absent targets: false_match_rate = share matched to anyone. median_entropy_bits over all targets.
-- released_records: the records of the release (chance for top-1 is 1 / released_records);
-- unique_record_share: the share of them whose released rows (item, value, ts as released, as a multiset)
-- no other record has, whatever any adversary knows.
-- The targets are those of the truth table: with an empty aux table none is matched (reidentified 0);
-- with an empty truth table the counts are 0 and the shares NULL.
CREATE OR REPLACE MACRO deanonymize_evaluate(published_table, aux_table, truth_table, rho0 := 1.5, d0 := 30, phi := 1.5,
                                             use_dates := true, hierarchies := NULL) AS TABLE
WITH
args AS (
    SELECT ok FROM anon_arguments(anon_deanonymize_args_ok('deanonymize_evaluate', published_table, aux_table, rho0, d0, phi, use_dates)
                                  AND anon_name_ok('deanonymize_evaluate', 'truth_table', truth_table))),
checks AS (  -- the truth table here; the other two in anon_deanonymize, whose rows the aggregate below reads
    SELECT ok FROM anon_require_columns('deanonymize_evaluate', 'truth_table', truth_table, ['target_id', 'record_id'])),
truth AS (SELECT target_id, record_id FROM args, anon_read(truth_table, ['target_id', 'record_id'])),
record_rows AS (  -- each released record's rows, as a sorted list of their released values
    SELECT record_id, list_sort(list({'item': item, 'value': value, 'ts': ts})) AS released
    FROM args, anon_read(published_table, ['record_id', 'item', 'value', 'ts']) WHERE record_id IS NOT NULL
    GROUP BY record_id),
uniqueness AS (
    SELECT coalesce(sum(holders), 0) AS released_records,
           sum(holders) FILTER (WHERE holders = 1) / sum(holders) AS unique_record_share
    FROM (SELECT count(*) AS holders FROM record_rows GROUP BY released)),
attacked AS (  -- per target of the truth table: the attack's outcome and the own record's score among the best
    SELECT t.target_id, t.record_id, d.matched, d.best_record, d.entropy_bits,
           coalesce(d.top_candidates, []) AS top,
           coalesce(list_filter(coalesce(d.top_candidates, []), lambda c: c.record_id = t.record_id)[1].score, 0) AS own
    FROM truth t
    LEFT JOIN anon_deanonymize('deanonymize_evaluate', published_table, aux_table, rho0, d0, phi, use_dates, hierarchies) d
        USING (target_id)),
ranked AS (  -- better: records scoring more than the own record; tied: records scoring as much (itself included)
    SELECT *, len(list_filter(top, lambda c: c.score > own)) AS better,
           greatest(CASE WHEN own > 0 THEN len(list_filter(top, lambda c: c.score = own))
                         ELSE (SELECT released_records FROM uniqueness) - len(top) END, 1) AS tied
    FROM attacked),
summary AS (
    SELECT count(*) FILTER (WHERE record_id IS NOT NULL) AS present_targets,
           avg(CASE WHEN matched AND best_record = record_id THEN 1.0 ELSE 0.0 END)
               FILTER (WHERE record_id IS NOT NULL) AS reidentified,
           count(*) FILTER (WHERE record_id IS NULL) AS absent_targets,
           avg(CASE WHEN matched THEN 1.0 ELSE 0.0 END) FILTER (WHERE record_id IS NULL) AS false_match_rate,
           median(entropy_bits) AS median_entropy_bits,
           avg(CASE WHEN better = 0 THEN 1.0 / tied ELSE 0.0 END) FILTER (WHERE record_id IS NOT NULL) AS top1_share,
           avg(greatest(least((5 - better) / tied, 1.0), 0.0)) FILTER (WHERE record_id IS NOT NULL) AS top5_share
    FROM ranked)
SELECT summary.*, uniqueness.* FROM summary, uniqueness, checks WHERE checks.ok;

-- What an adversary might know, for experiments: for `targets` records of table_name (chosen by seed),
-- known_items of their items, each rating moved by a whole number in [-value_noise, value_noise] and each
-- date by up to days_noise days (no dates with with_dates := false). Columns: target_id (= record_id),
-- item, value, ts.
CREATE OR REPLACE MACRO synthetic_aux(table_name, targets, known_items := 8, value_noise := 0, days_noise := 14,
                                      with_dates := true, seed := 0) AS TABLE
WITH
args AS (
    SELECT ok FROM anon_arguments(anon_name_ok('synthetic_aux', 'table_name', table_name)
                                  AND anon_number_ok('synthetic_aux', 'targets', targets, lo := 1, integer := true)
                                  AND anon_number_ok('synthetic_aux', 'known_items', known_items, lo := 1, integer := true)
                                  AND anon_number_ok('synthetic_aux', 'value_noise', value_noise, lo := 0, integer := true)
                                  AND anon_number_ok('synthetic_aux', 'days_noise', days_noise, lo := 0, integer := true)
                                  AND anon_at_most('synthetic_aux', 'value_noise', value_noise, 'noise')
                                  AND anon_at_most('synthetic_aux', 'days_noise', days_noise, 'noise')
                                  AND anon_bool_ok('synthetic_aux', 'with_dates', with_dates)
                                  AND anon_number_ok('synthetic_aux', 'seed', seed, integer := true))),
checks AS (
    SELECT ok FROM anon_require_columns('synthetic_aux', 'table_name', table_name, ['record_id', 'item', 'value', 'ts'],
                                        typed := ['value', 'ts'], type_pattern := anon_number_types() || '|' || anon_temporal_types(),
                                        type_text := 'raw ratings (numbers and dates)')),
source AS (SELECT record_id, item, value, ts FROM args, anon_read(table_name, ['record_id', 'item', 'value', 'ts'])),
chosen AS (SELECT record_id FROM (SELECT DISTINCT record_id FROM source)
           ORDER BY hash(seed, record_id, 't') LIMIT try_cast(targets AS BIGINT)),
picked AS (
    SELECT t.record_id, t.item, t.value, t.ts,
           row_number() OVER (PARTITION BY t.record_id ORDER BY hash(seed, t.record_id, t.item, 'k')) AS pick
    FROM source t JOIN chosen USING (record_id))
SELECT record_id AS target_id, item,
       value + CASE WHEN value_noise > 0
                    THEN (hash(seed, record_id, item, 'v') % (2 * try_cast(value_noise AS BIGINT) + 1))::INTEGER
                         - try_cast(value_noise AS BIGINT) ELSE 0 END AS value,
       CASE WHEN with_dates THEN try_cast(ts AS DATE) + ((hash(seed, record_id, item, 'd') % (2 * try_cast(days_noise AS BIGINT) + 1))::INTEGER
                                                         - try_cast(days_noise AS INTEGER)) END AS ts
FROM picked, checks WHERE pick <= try_cast(known_items AS BIGINT) AND checks.ok
UNION ALL BY NAME  -- the checks run on an empty table too (never a row)
SELECT NULL AS target_id FROM checks WHERE NOT ok;

-- Linkage audit for perturbed releases (random_walk(), noise) and generalized ones: an adversary knows the
-- exact QI values of the people in aux_table (with their ids); each is linked to the released record
-- nearest to those values. Per QI, the gap between a person's value and what the released value covers
-- (read as 55_release_labels.sql says: raw values, mondrian's text labels or typed bounds): for numbers
-- and dates the distance to the covered range, scaled by the release's range; for categories (any other
-- type) 0 on an exact match (or membership of a released set) and 1 otherwise. The distance is the
-- Euclidean norm of the gaps. One row: people, linked_to_own_record (the share whose nearest record is
-- their own, by id_column; a tie among n nearest records counts 1/n) and mean_rank (the average position
-- of their own record among all records ordered by distance; 1 = nearest). People whose id is not in the
-- release are not counted; an empty aux table gives people = 0 and NULL figures.
CREATE OR REPLACE MACRO linkage_nearest(release_table, aux_table, qis, id_column) AS TABLE
WITH
args AS (  -- bound first: a wrong argument fails before anything else
    SELECT ok FROM anon_arguments(anon_name_ok('linkage_nearest', 'release_table', release_table)
                                  AND anon_name_ok('linkage_nearest', 'aux_table', aux_table)
                                  AND anon_columns_ok('linkage_nearest', 'qis', qis)
                                  AND anon_name_ok('linkage_nearest', 'id_column', id_column, 'a column name')
                                  AND anon_check(list_contains(list_transform(anon_names(qis), lambda q: lower(q)),
                                                               lower(id_column::VARCHAR)),
                                                 'linkage_nearest', 'id_column', 'must not be one of the QIs'))),
checks AS (
    SELECT r.ok AND a.ok AS ok
    FROM anon_require_columns('linkage_nearest', 'release_table', release_table,
                              anon_checked_names('linkage_nearest', 'qis', qis, 'id_column', id_column)) r,
         anon_require_columns('linkage_nearest', 'aux_table', aux_table,
                              anon_checked_names('linkage_nearest', 'qis', qis, 'id_column', id_column)) a),
aux AS MATERIALIZED (  -- every argument below is coerced (anon_names, ::VARCHAR), so it binds before args fails
    SELECT * FROM anon_aux_long(anon_after(anon_name_ok('linkage_nearest', 'aux_table', aux_table), aux_table::VARCHAR),
                                list_transform(anon_names(qis), lambda q: lower(q)), lower(id_column::VARCHAR))),
rel_long AS MATERIALIZED (
    SELECT r.* FROM args, anon_release_long(anon_after(anon_name_ok('linkage_nearest', 'release_table', release_table),
                                                       release_table::VARCHAR), list_transform(anon_names(qis), lambda q: lower(q)),
                                            lower(id_column::VARCHAR)) r),
rel AS MATERIALIZED (  -- each released value parsed once per distinct (QI, label), by the kind of the aux column
    SELECT r.__anon_id, r.qi, l.kind, l.b
    FROM rel_long r
    JOIN (SELECT qi, label, kind, anon_label_read(label::JSON, kind) AS b
          FROM (SELECT DISTINCT qi, label FROM rel_long) JOIN (SELECT DISTINCT qi, kind FROM aux) USING (qi)) l
      ON l.qi = r.qi AND l.label IS NOT DISTINCT FROM r.label),
scale AS (  -- per numeric QI: 1 / the range the release covers (1 when it is a point)
    SELECT qi, CASE WHEN max(b.hi) > min(b.lo) THEN 1.0 / (max(b.hi) - min(b.lo)) ELSE 1.0 END AS inv
    FROM rel GROUP BY qi),
positions AS (SELECT qi, inv, row_number() OVER (ORDER BY qi) AS p FROM scale),  -- each QI's place p
labels AS (  -- the distinct released labels, numbered (lid) from 1, with their QI's place and the weight of a gap
    SELECT l.qi, l.b, row_number() OVER (ORDER BY l.qi, l.b::VARCHAR) AS lid, q.p, q.inv
    FROM (SELECT DISTINCT qi, b FROM rel) l JOIN positions q USING (qi)),
every_label AS (SELECT list({'p': p, 'b': b, 'inv': inv} ORDER BY lid) AS labels FROM labels),
known AS (  -- per known row (__anon_person): its weighted squared gap to every label, at index lid, computed
            -- once per label rather than once per released record; a lambda over the one list of labels, not
            -- an ordered list() of the gaps per person, which sorts every gap (docs/performance.md)
    SELECT w.__anon_person, w.person,
           list_transform(e.labels, lambda l: pow(anon_label_gap(l.b, w.vals[l.p].t, w.vals[l.p].x, w.vals[l.p].kind)
                                                  * CASE WHEN w.vals[l.p].kind = 'category' THEN 1.0 ELSE l.inv END, 2)) AS gaps
    FROM (SELECT a.__anon_person, any_value(a.__anon_id) AS person, list({'t': a.t, 'x': a.x, 'kind': a.kind} ORDER BY q.p) AS vals
          FROM aux a JOIN positions q USING (qi) GROUP BY a.__anon_person) w, every_label e),
records AS (  -- per released id: the labels of its rows (every QI of every row with that id), in one order, so
              -- that equal sets of labels sum to equal distances whatever the threads (ties are exact)
    SELECT r.__anon_id AS record, list(l.lid ORDER BY l.lid) AS lids
    FROM rel r JOIN labels l ON l.qi = r.qi AND l.b IS NOT DISTINCT FROM r.b GROUP BY r.__anon_id),
distances AS MATERIALIZED (  -- per known row and released id: the gaps of the id's labels summed
    SELECT k.person, r.record, list_sum(list_select(k.gaps, r.lids)) AS dist FROM known k, records r),
own AS (  -- each known row whose own record is released, with that record's distance
    SELECT row_number() OVER () AS i, person, dist FROM distances WHERE person = record),
ranks AS (  -- the own record's rank among every record at the person's distances (rank() with NULLs last,
            -- counted rather than sorted): 1 + the records strictly nearer, and the records tied with it
    SELECT 1 + count(*) FILTER (WHERE d.dist < o.dist OR (o.dist IS NULL AND d.dist IS NOT NULL)) AS place,
           count(*) FILTER (WHERE d.dist IS NOT DISTINCT FROM o.dist) AS tied
    FROM own o JOIN distances d ON d.person = o.person GROUP BY o.i),
summary AS (
    SELECT count(*) AS people,
           avg(CASE WHEN place = 1 THEN 1.0 / tied ELSE 0 END) AS linked_to_own_record,
           avg(place) AS mean_rank
    FROM ranks)
SELECT summary.* FROM args, summary, checks WHERE checks.ok;
