{#-
    anonymize(relation, qis, k, keep=[], mode='strict', hierarchies=none, sensitive=none, l=none, l_kind='distinct',
              c=2, t=none, max_suppression=0): the body of a model that publishes a k-anonymous release of
    `relation` (a ref(), a source() or a table name) by Mondrian: every row of the source, with the
    quasi-identifiers `qis` replaced by their equivalence class's generalization. It fails closed: besides
    the QIs, only the columns listed in `keep` (and the `sensitive` column) are published, unchanged; every
    other column of the source is left out, so a column added to the source later never leaks.

        {{ config(materialized='table') }}
        {{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 10, keep=['diagnosis']) }}
        {{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip'], 10, sensitive='diagnosis', l=2) }}
        {{ duckdb_anon.anonymize(ref('patients'), ['age', 'sex'], 10, hierarchies={'age': ref('age_hierarchy')}) }}

    It renders  SELECT * FROM mondrian('<relation>', ['age', 'zip', 'sex'], 10, mode := 'strict', ...,
    keep := ['diagnosis'])  with the relation, the column names and the hierarchy tables as escaped string
    literals and the numbers checked here: mondrian()'s `keep` publishes the columns (one rule, in SQL).
    mondrian() itself checks the rest against the data (k, the models, keep) and raises an error naming the
    argument at fault.
-#}
{% macro anonymize(relation, qis, k, keep=[], mode='strict', hierarchies=none, sensitive=none, l=none, l_kind='distinct', c=2, t=none, max_suppression=0) -%}
    {{- duckdb_anon.check_names('anonymize', 'qis', qis) -}}
    {%- if keep is string or keep is mapping or keep is not iterable -%}
        {{ exceptions.raise_compiler_error("anonymize(): argument 'keep' must be a list of column names, got " ~ keep) }}
    {%- endif -%}
    {%- if keep | length > 0 %}{{- duckdb_anon.check_names('anonymize', 'keep', keep) -}}{% endif -%}
    {%- set kept = (keep | list) + ([sensitive] if sensitive is not none and (sensitive | lower) not in (keep | map('lower') | list) else []) -%}
    {{- duckdb_anon.check_integer('anonymize', 'k', k, 1) -}}
    {%- if mode is not string -%}
        {{ exceptions.raise_compiler_error("anonymize(): argument 'mode' must be 'strict' or 'relaxed', got " ~ mode) }}
    {%- endif -%}
    {%- if hierarchies is not none and hierarchies is not mapping -%}
        {{ exceptions.raise_compiler_error("anonymize(): argument 'hierarchies' must map QI names to hierarchy tables, got " ~ hierarchies) }}
    {%- endif -%}
    {%- if sensitive is not none -%}{{- duckdb_anon.check_name('anonymize', 'sensitive', sensitive) -}}{%- endif -%}
    {%- for name, value in [('l', l), ('c', c), ('t', t), ('max_suppression', max_suppression)] if value is not none and (value is not number or value is sameas true or value is sameas false) -%}
        {{ exceptions.raise_compiler_error("anonymize(): argument '" ~ name ~ "' must be a number, got " ~ value) }}
    {%- endfor -%}
SELECT * FROM mondrian({{ duckdb_anon.sql_literal(relation) }}, {{ duckdb_anon.sql_list(qis) }}, {{ k }}, mode := {{ duckdb_anon.sql_literal(mode) }}
    {%- if hierarchies %}, hierarchies := {{ duckdb_anon.sql_map(hierarchies) }}{% endif %}
    {%- if sensitive is not none %}, sensitive := {{ duckdb_anon.sql_literal(sensitive) }}, l_kind := {{ duckdb_anon.sql_literal(l_kind) }}, c := {{ c }}
        {%- if l is not none %}, l := {{ l }}{% endif %}
        {%- if t is not none %}, t := {{ t }}{% endif %}
    {%- endif %}
    {%- if max_suppression %}, max_suppression := {{ max_suppression }}{% endif %}, keep := {{ duckdb_anon.sql_list(kept) }})
{{ duckdb_anon.release_order() }}
{%- endmacro %}
