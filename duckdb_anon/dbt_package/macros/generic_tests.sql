{#-
    Generic tests for published releases. Each returns the offending rows, so dbt counts them as failures.
    k_anonymous and l_diverse are plain GROUP BY queries over the model, independent of the functions that
    made the release: they hold any table to the privacy model, whatever produced it. A class is a group of
    rows with identical QI values; NULL counts as a value (GROUP BY puts the NULLs together).
-#}

{#- k-anonymity: one row per class with fewer than k rows (its QI values and class_size). -#}
{% test k_anonymous(model, qis, k) %}
    {{- duckdb_anon.check_names('k_anonymous', 'qis', qis) -}}
    {{- duckdb_anon.check_integer('k_anonymous', 'k', k, 1) -}}
SELECT {{ duckdb_anon.sql_identifiers(qis) }}, count(*) AS class_size
FROM {{ model }}
GROUP BY {{ duckdb_anon.sql_identifiers(qis) }}
HAVING count(*) < {{ k }}
{% endtest %}

{#-
    Distinct l-diversity: one row per class whose sensitive column takes fewer than l distinct values
    (its QI values, class_size and distinct_sensitive). A NULL sensitive value counts as one value, as in
    class_profile() and privacy_measures().
-#}
{% test l_diverse(model, qis, sensitive, l) %}
    {{- duckdb_anon.check_names('l_diverse', 'qis', qis) -}}
    {{- duckdb_anon.check_name('l_diverse', 'sensitive', sensitive) -}}
    {{- duckdb_anon.check_integer('l_diverse', 'l', l, 1) -}}
    {%- set s = duckdb_anon.sql_identifier(sensitive) -%}
SELECT {{ duckdb_anon.sql_identifiers(qis) }}, count(*) AS class_size,
       count(DISTINCT {{ s }}) + CASE WHEN count({{ s }}) < count(*) THEN 1 ELSE 0 END AS distinct_sensitive
FROM {{ model }}
GROUP BY {{ duckdb_anon.sql_identifiers(qis) }}
HAVING count(DISTINCT {{ s }}) + CASE WHEN count({{ s }}) < count(*) THEN 1 ELSE 0 END < {{ l }}
{% endtest %}

{#-
    Pattern preservation: the constraints of `locality_table` (made by localities() on the source) that the
    model's column breaks, as returned by check_localities(). Rows are matched by scan position, so the
    model must keep the source's row order (random_walk() returns rows in source order; materialize it as
    a table). Use it as a column test: the column is the walked one.
-#}
{% test localities_preserved(model, column_name, locality_table) %}
    {{- duckdb_anon.check_name('localities_preserved', 'column_name', column_name) -}}
SELECT * FROM check_localities({{ duckdb_anon.sql_literal(model) }}, {{ duckdb_anon.sql_literal(column_name) }}, {{ duckdb_anon.sql_literal(locality_table) }})
{% endtest %}

{#-
    Linkage audit: the adversary knows the exact QI values of the people in `aux` (a ref() or a table name;
    with their ids in column `id` when the model keeps ids). linkage_classes() counts, per person, the
    model's rows whose labels cover those values (mondrian's text or typed shape). The test returns one row
    (people, reidentified, mean_candidates) when the share re-identified, the mean over people of
    1 / consistent rows, exceeds max_rate (a number in [0, 1]); on a k-anonymous release it is at most 1/k.
    Without `id` every person of `aux` is taken to be in the model (the prosecutor's view).
-#}
{% test linkage_below(model, aux, qis, max_rate, id=none, hierarchies=none) %}
    {{- duckdb_anon.check_names('linkage_below', 'qis', qis) -}}
    {%- if id is not none -%}{{- duckdb_anon.check_name('linkage_below', 'id', id) -}}{%- endif -%}
    {%- if max_rate is not number or max_rate is boolean or max_rate < 0 or max_rate > 1 -%}
        {{ exceptions.raise_compiler_error("linkage_below(): argument 'max_rate' must be a number in [0, 1], got " ~ max_rate) }}
    {%- endif -%}
    {%- if hierarchies is not none and hierarchies is not mapping -%}
        {{ exceptions.raise_compiler_error("linkage_below(): argument 'hierarchies' must map QI names to hierarchy tables, got " ~ hierarchies) }}
    {%- endif -%}
SELECT people, reidentified, mean_candidates
FROM linkage_classes({{ duckdb_anon.sql_literal(model) }}, {{ duckdb_anon.sql_literal(aux) }}, {{ duckdb_anon.sql_list(qis) }},
                     {{ duckdb_anon.sql_literal(id) if id is not none else 'NULL' }}
                     {%- if hierarchies %}, hierarchies := {{ duckdb_anon.sql_map(hierarchies) }}{% endif %})
WHERE reidentified > {{ max_rate }}
{% endtest %}

{#-
    Scoreboard-RH audit of a release of rows (record_id, item, value, ts), such as a Mondrian release of
    ratings: the adversary knows some rows of each target of `aux` (target_id, item, value, ts); `truth`
    (target_id, record_id, NULL when absent) says which record each target is. deanonymize_evaluate()
    scores every record against each target. The test returns one row (present_targets, reidentified,
    top1_share, top5_share, released_records, unique_record_share) when the share of targets whose own
    record scores best exceeds max_top1, or, when given, the share with it among the five best exceeds
    max_top5, or the share of records whose released rows no other record has exceeds max_unique_records
    (each a number in [0, 1]). A share that cannot be measured (no present target, no record) fails the
    test. It gates on the best guess, not on the eccentricity-gated `reidentified`:
    the top candidate may be right for most targets while none stands out.
-#}
{% test scoreboard_below(model, aux, truth, max_top1, max_top5=none, max_unique_records=none) %}
    {%- for name, value in [('max_top1', max_top1), ('max_top5', max_top5), ('max_unique_records', max_unique_records)]
        if (value is not none or name == 'max_top1')
           and (value is not number or value is boolean or value < 0 or value > 1) -%}
        {{ exceptions.raise_compiler_error("scoreboard_below(): argument '" ~ name ~ "' must be a number in [0, 1], got " ~ value) }}
    {%- endfor -%}
SELECT present_targets, reidentified, top1_share, top5_share, released_records, unique_record_share
FROM deanonymize_evaluate({{ duckdb_anon.sql_literal(model) }}, {{ duckdb_anon.sql_literal(aux) }}, {{ duckdb_anon.sql_literal(truth) }})
WHERE coalesce(top1_share > {{ max_top1 }}, true)
    {%- if max_top5 is not none %} OR coalesce(top5_share > {{ max_top5 }}, true){% endif %}
    {%- if max_unique_records is not none %} OR coalesce(unique_record_share > {{ max_unique_records }}, true){% endif %}
{% endtest %}
