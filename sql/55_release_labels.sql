-- Reading a released value as the set of original values it stands for, so that the audits
-- (linkage_classes, linkage_nearest, deanonymize) read mondrian() releases of both shapes, another tool's
-- release written with the same conventions, and raw values alike. Pure SQL.
--
-- A released value arrives as JSON (to_json of the column, whatever its type), and is read by the kind
-- of the original values it is compared with ('numeric', 'temporal' or 'category'):
--   text labels  numbers 'lo-hi' or 'v' ('-5--3' is a range of negatives); dates and times 'lo/hi' or 'v'
--                (ISO 8601 interval), a year 'YYYY' or a month 'YYYY-MM' (hierarchy_dates' nodes) as the
--                whole period; ',NULL' appended when NULL is covered too; categories '{a,b,c}' (NULL
--                inside the set covers NULL) or the single value; '*' covers everything
--   typed        STRUCT(lo, hi, mean) (mondrian(output := 'typed')): numbers and dates lo..hi; categories
--                every value from lo to hi in value order (exact when the release used
--                categorical_order := 'value'; the text shape lists a class's categories exactly)
--   raw values   a number, date or category covers itself
--   NULL         covers NULL only (mondrian's all-NULL class)
-- Category values in text labels are escaped as anon_label_escape writes them: '\,' '\{' '\}' '\\' stand
-- for the characters, '\NULL' and '\*' for those texts, and a bare NULL inside a set for NULL. A raw
-- category that opens with a brace reads as a set; one holding a backslash covers its text both as written
-- and unescaped.

-- The members of a set label's body ('a\,b,NULL,c', braces removed), still escaped: every member ends at
-- a comma no backslash escapes (one is appended after the last).
CREATE OR REPLACE MACRO anon_label_members(body) AS
    regexp_extract_all(body || ',', '((?:\\.|[^\\,])*),', 1);

-- One escaped member as the value's text: every '\x' becomes 'x'.
CREATE OR REPLACE MACRO anon_label_unescape(member) AS
    regexp_replace(member, '\\(.)', '\1', 'g');

-- The key (epoch microseconds) of a date or time text, or of the first (`last` false) or last (`last` true)
-- microsecond of a year 'YYYY' or month 'YYYY-MM', the nodes of hierarchy_dates that k^m-anonymity and
-- Mondrian's hierarchies publish; NULL for other text.
CREATE OR REPLACE MACRO anon_period_key(t, last) AS
    coalesce(epoch_us(try_cast(t AS TIMESTAMP))::DOUBLE,
             CASE WHEN regexp_full_match(t, '[0-9]{4}(-[0-9]{2})?') THEN
                  epoch_us(CASE WHEN NOT last THEN try_cast(t || CASE WHEN length(t) = 4 THEN '-01-01' ELSE '-01' END AS TIMESTAMP)
                                WHEN length(t) = 4 THEN try_cast(t || '-01-01' AS TIMESTAMP) + INTERVAL 1 YEAR
                                ELSE try_cast(t || '-01' AS TIMESTAMP) + INTERVAL 1 MONTH END)::DOUBLE
                  - CASE WHEN last THEN 1 ELSE 0 END END);

CREATE OR REPLACE MACRO anon_label_elems_read(label, kind, body, members, num) AS
    {'text': label,
     'lo': CASE kind WHEN 'numeric' THEN coalesce(try_cast(nullif(num.lo, '') AS DOUBLE), try_cast(body AS DOUBLE))
                     WHEN 'temporal' THEN anon_period_key(split_part(body, '/', 1), false) END,
     'hi': CASE kind WHEN 'numeric' THEN coalesce(try_cast(nullif(num.hi, '') AS DOUBLE), try_cast(body AS DOUBLE))
                     WHEN 'temporal' THEN anon_period_key(CASE WHEN contains(body, '/') THEN split_part(body, '/', 2)
                                                               ELSE body END, true) END,
     'clo': NULL::VARCHAR, 'chi': NULL::VARCHAR,
     'elems': CASE WHEN body LIKE '{%}' THEN list_transform(list_filter(members, lambda m: m <> 'NULL'),
                                                            lambda m: anon_label_unescape(m))
                   -- one value: as mondrian escaped it, or a raw value's own text (which may hold a backslash)
                   ELSE list_distinct([anon_label_unescape(body), body]) END,
     'elem_keys': list_transform(members, lambda e: CASE kind WHEN 'numeric' THEN try_cast(e AS DOUBLE)
                                                             WHEN 'temporal' THEN epoch_us(try_cast(e AS TIMESTAMP))::DOUBLE END),
     'null_ok': label IS NULL OR label = '*' OR (kind <> 'category' AND label LIKE '%,NULL')
                OR (body LIKE '{%}' AND list_contains(members, 'NULL')),
     'star': coalesce(label = '*', false)};

-- A set label (it opens with a brace: a value's own brace is escaped) lists its members; anything else is
-- one member.
CREATE OR REPLACE MACRO anon_label_body_read(label, kind, body) AS
    anon_label_elems_read(label, kind, body,
        CASE WHEN body LIKE '{%}' THEN anon_label_members(body[2:-2]) ELSE [body] END,
        regexp_extract(body, '^(-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)'
                             || '-(-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)$', ['lo', 'hi']));

-- A text label (or a raw value's text). The anchored regex reads '-5--3' as sign, 5, separator, -3.

CREATE OR REPLACE MACRO anon_label_text_read(label, kind) AS
    anon_label_body_read(label, kind, CASE WHEN kind = 'category' THEN label ELSE regexp_replace(label, ',NULL$', '') END);

-- The parsed value: text (the label itself, matched against hierarchy nodes), lo/hi (the covered range as
-- anon_numeric_key's DOUBLE keys: epoch microseconds for dates), clo/chi (a typed category range), elems
-- (a set's members as text) and elem_keys (as keys), null_ok (covers NULL), star (covers everything).

CREATE OR REPLACE MACRO anon_label_read(j, kind) AS
    CASE WHEN json_type(j) = 'OBJECT' THEN
        {'text': NULL::VARCHAR,
         'lo': CASE kind WHEN 'numeric' THEN try_cast(j->>'lo' AS DOUBLE)
                         WHEN 'temporal' THEN epoch_us(try_cast(j->>'lo' AS TIMESTAMP))::DOUBLE END,
         'hi': CASE kind WHEN 'numeric' THEN try_cast(j->>'hi' AS DOUBLE)
                         WHEN 'temporal' THEN epoch_us(try_cast(j->>'hi' AS TIMESTAMP))::DOUBLE END,
         'clo': CASE WHEN kind = 'category' THEN j->>'lo' END, 'chi': CASE WHEN kind = 'category' THEN j->>'hi' END,
         'elems': []::VARCHAR[], 'elem_keys': []::DOUBLE[], 'null_ok': (j->>'lo') IS NULL, 'star': false}
    ELSE anon_label_text_read(j->>'$', kind) END;

-- Does a parsed label cover an original value (t: its text, x: its anon_numeric_key)?
CREATE OR REPLACE MACRO anon_label_covers(b, t, x) AS
    CASE WHEN t IS NULL THEN b.null_ok
         ELSE b.star OR list_contains(b.elems, t) OR coalesce(x BETWEEN b.lo AND b.hi, false)
              OR coalesce(list_contains(b.elem_keys, x), false) OR coalesce(t BETWEEN b.clo AND b.chi, false) END;

-- How far an original value lies from what a parsed label covers, on one QI: 0 when covered; else, for
-- numbers and dates, the gap to the covered range (in keys), and for categories 1 (exact match only).
CREATE OR REPLACE MACRO anon_label_gap(b, t, x, kind) AS
    CASE WHEN anon_label_covers(b, t, x) THEN 0.0
         WHEN kind <> 'category' AND x IS NOT NULL AND b.lo IS NOT NULL THEN greatest(b.lo - x, x - b.hi, 0.0)
         ELSE 1.0 END;

-- One original value as the audits read it: its text (compared with labels and hierarchy leaves), its
-- DOUBLE order key (compared with ranges) and its kind, which decides how labels compared with it are read.
-- (A macro so that the COLUMNS() it is given appears once in the calling expression.)
CREATE OR REPLACE MACRO anon_value_read(v) AS
    {'t': v::VARCHAR, 'x': anon_numeric_key(v),
     'kind': CASE WHEN anon_is_temporal(v) THEN 'temporal' WHEN anon_is_numeric(v) THEN 'numeric' ELSE 'category' END};

-- The QI columns and the id column of a table, picked by name (lower_qis and id_column in lower case) with
-- COLUMNS(lambda ...) next to a constant sentinel column (__anon_none) rather than by name, so that a
-- missing column does not stop the binder (anon_require_columns names it instead); coalesce(sentinel
-- NULL, column) is the column itself.

-- The adversary's knowledge in long form: (__anon_person (the row's number), __anon_id, qi, t, x, kind),
-- one row per person and QI, the value read by anon_value_read. Read it once (materialized): the row
-- numbers must not be recomputed.
CREATE OR REPLACE MACRO anon_aux_long(aux_table, lower_qis, id_column) AS TABLE
SELECT __anon_person, __anon_id, qi, v.t AS t, v.x AS x, v.kind AS kind
FROM (SELECT __anon_person, __anon_id, unnest(names) AS qi, unnest(vals) AS v
      FROM (SELECT __anon_person, __anon_id,
                   list_transform(struct_keys(struct_pack(*COLUMNS(lambda c: c NOT IN ('__anon_person', '__anon_id')))),
                                  lambda n: lower(n)) AS names,
                   [*COLUMNS(lambda c: c NOT IN ('__anon_person', '__anon_id'))] AS vals
            FROM (SELECT row_number() OVER () AS __anon_person,
                         coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = id_column)) AS __anon_id,
                         anon_value_read(COLUMNS(lambda c: c = '__anon_none' OR list_contains(lower_qis, lower(c))))
                  FROM (SELECT NULL AS __anon_none, * FROM query_table(aux_table)))))
WHERE qi <> '__anon_none';

-- A release in long form: (__anon_id, qi, label), label the released value as JSON text (any shape).
CREATE OR REPLACE MACRO anon_release_long(release_table, lower_qis, id_column) AS TABLE
SELECT * FROM (
SELECT __anon_id, unnest(names) AS qi, unnest(labels) AS label
FROM (SELECT __anon_id,
             list_transform(struct_keys(struct_pack(*COLUMNS(lambda c: c <> '__anon_id'))), lambda n: lower(n)) AS names,
             [*COLUMNS(lambda c: c <> '__anon_id')] AS labels
      FROM (SELECT coalesce(*COLUMNS(lambda c: c = '__anon_none' OR lower(c) = id_column)) AS __anon_id,
                   to_json(COLUMNS(lambda c: c = '__anon_none' OR list_contains(lower_qis, lower(c))))::VARCHAR
            FROM (SELECT NULL AS __anon_none, * FROM query_table(release_table)))))
WHERE qi <> '__anon_none';
