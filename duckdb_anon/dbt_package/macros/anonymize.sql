{#-
    anonymize(relation, qis, k, mode='strict'): the body of a model that publishes a k-anonymous release of
    `relation` (a ref(), a source() or a table name) by Mondrian: every row and column of the source, with
    the quasi-identifiers `qis` replaced by their equivalence class's generalization.

        {{ config(materialized='view') }}
        {{ duckdb_anon.anonymize(ref('patients'), ['age', 'zip', 'sex'], 10) }}

    It renders  SELECT * FROM mondrian('<relation>', ['age', 'zip', 'sex'], 10, 'strict')  with the
    relation and the column names as escaped string literals. mondrian() itself checks k against the data
    and the mode ('strict' or 'relaxed') and raises an error naming the argument at fault.
-#}
{% macro anonymize(relation, qis, k, mode='strict') -%}
    {{- duckdb_anon.check_names('anonymize', 'qis', qis) -}}
    {{- duckdb_anon.check_integer('anonymize', 'k', k, 1) -}}
    {%- if mode is not string -%}
        {{ exceptions.raise_compiler_error("anonymize(): argument 'mode' must be 'strict' or 'relaxed', got " ~ mode) }}
    {%- endif -%}
SELECT * FROM mondrian({{ duckdb_anon.sql_literal(relation) }}, {{ duckdb_anon.sql_list(qis) }}, {{ k }}, {{ duckdb_anon.sql_literal(mode) }})
{%- endmacro %}
