{#-
    The dp_release materialization: a model that publishes a dp_aggregate() result and debits the privacy
    budget of its people, in one transaction, as duckdb_anon.publish_dp() does from Python. The rules (whose
    budget, the delta spent, whether the budget can pay and the refusal saying what is left, the debit's
    conditional UPDATE, the release's record in anon_dp_releases) are the SQL macros of sql/82_dp_ledger.sql
    that publish_dp() runs too; this only calls them. A build that the budget cannot pay fails with the
    refusal and leaves no table, no record and no debit. Every build of the model is a new release and
    spends again.

        {{ config(materialized='dp_release', group_by=['item'], value='value', aggregates=['count', 'avg'],
                  epsilon=1, delta=1e-6, max_groups_contributed=5, min_value=1, max_value=5) }}
        {{ ref('ratings').identifier }}

    The model's body is the name of the table released from, as its privacy unit declaration and its budget
    name it; the config holds dp_aggregate()'s other arguments. Values become SQL literals (strings with
    their quotes doubled), never pasted text; dp_aggregate()'s checks (anon_dp_arguments_ok) run on them
    before the ledger is touched, and name dp_release and the argument at fault.
-#}

{#- A config value as a SQL literal: NULL, a number, a list of strings, or a string literal. -#}
{% macro dp_value(value) -%}
    {%- if value is none -%}NULL
    {%- elif value is number and value is not boolean -%}{{ value }}
    {%- elif value is not string and value is iterable and value is not mapping -%}{{ duckdb_anon.sql_list(value) }}
    {%- else -%}{{ duckdb_anon.sql_literal(value) }}
    {%- endif -%}
{%- endmacro %}

{#- A query inside the model's transaction: dbt's run_query() does not begin one, this begins or joins it. -#}
{% macro dp_query(sql) -%}
    {%- call statement('dp_release_step', fetch_result=True, auto_begin=True) -%}{{ sql }}{%- endcall -%}
    {{- return(load_result('dp_release_step').table) -}}
{%- endmacro %}

{% materialization dp_release, adapter='duckdb' %}
  {%- set fn = 'dp_release' -%}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing_relation = load_cached_relation(this) -%}
  {%- set table_name = compiled_code | trim -%}
  {%- set names = ['value', 'aggregates', 'epsilon', 'delta', 'max_groups_contributed', 'max_rows_per_group',
                   'min_value', 'max_value', 'noise', 'public_groups', 'privacy_unit_column', 'confidence'] -%}
  {%- set defaults = {'aggregates': ['count'], 'max_rows_per_group': 1, 'noise': 'laplace', 'confidence': 0.95} -%}
  {%- set arguments = {'table_name': table_name, 'group_by': config.get('group_by')} -%}
  {%- for name in names -%}{%- do arguments.update({name: config.get(name, defaults.get(name))}) -%}{%- endfor -%}
  {%- if arguments['group_by'] is none or arguments['epsilon'] is none or arguments['delta'] is none -%}
    {{ exceptions.raise_compiler_error(fn ~ "(): the model's config must set group_by, epsilon and delta") }}
  {%- endif -%}
  {%- set unit -%}
    anon_dp_unit_table('{{ fn }}', {{ duckdb_anon.sql_literal(table_name) }}, {{ duckdb_anon.dp_value(arguments['privacy_unit_column']) }})
  {%- endset -%}
  {%- set spent -%}
    anon_dp_delta_spent({{ duckdb_anon.dp_value(arguments['noise']) }}, {{ duckdb_anon.dp_value(arguments['delta']) }}, {{ 'false' if arguments['public_groups'] is none else 'true' }})
  {%- endset -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  -- `BEGIN` happens here:
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {#- dp_aggregate()'s checks first, naming dp_release: the ledger's arithmetic would meet a bad epsilon as a cast error -#}
  {%- set checks -%}
    SELECT anon_dp_arguments_ok('{{ fn }}', {{ duckdb_anon.sql_literal(table_name) }}, {{ duckdb_anon.dp_value(arguments['group_by']) }},
    {%- for name in ['value', 'max_groups_contributed', 'max_rows_per_group', 'min_value', 'max_value', 'privacy_unit_column'] %}
      {{ duckdb_anon.dp_value(arguments[name]) }},{% endfor %} noisy := true,
    {%- for name in ['aggregates', 'epsilon', 'delta', 'noise', 'public_groups', 'confidence'] %}
      {{ name }} := {{ duckdb_anon.dp_value(arguments[name]) }}{{ "," if not loop.last }}{% endfor %})
  {%- endset -%}
  {%- do duckdb_anon.dp_query(checks) -%}

  {#- a release never replaces what it reads (duckdb_anon.publishing's rule; a model's own name is its release) -#}
  {%- for read in [table_name, arguments['public_groups']] if read is not none and (read | lower) == (this.identifier | lower) -%}
    {{ exceptions.raise_compiler_error(fn ~ "(): the model " ~ this.identifier ~ " reads the table of its own name; a release never replaces its source: rename the model") }}
  {%- endfor -%}
  {%- set ledger = duckdb_anon.dp_query("SELECT " ~ unit ~ " AS unit, " ~ spent ~ " AS spent") -%}
  {%- set unit_table = ledger.columns[0].values()[0] -%}
  {%- set delta_spent = ledger.columns[1].values()[0] -%}
  {#- the ledger adds up (sql/82_dp_ledger.sql, sql/74_publish_log.sql), a budget of an older version carried over first -#}
  {%- set carry = duckdb_anon.dp_query("SELECT anon_dp_carry_over_sql(" ~ duckdb_anon.sql_literal(unit_table) ~ ")").columns[0].values()[0] -%}
  {%- if carry is not none -%}
    {%- do duckdb_anon.dp_query(carry) -%}
    {%- do duckdb_anon.dp_query(duckdb_anon.dp_query("SELECT anon_dp_last_spend_sql(" ~ duckdb_anon.sql_literal(unit_table) ~ ")").columns[0].values()[0]) -%}
  {%- endif -%}
  {%- do duckdb_anon.dp_query("SELECT anon_dp_ledger_check('" ~ fn ~ "', " ~ duckdb_anon.sql_literal(unit_table) ~ ")") -%}
  {%- set debit = duckdb_anon.dp_query("SELECT anon_dp_budget_check('" ~ fn ~ "', " ~ duckdb_anon.sql_literal(unit_table) ~ ", "
                            ~ duckdb_anon.dp_value(arguments['epsilon']) ~ ", " ~ delta_spent ~ "), anon_dp_debit_sql("
                            ~ duckdb_anon.sql_literal(unit_table) ~ ", " ~ duckdb_anon.dp_value(arguments['epsilon']) ~ ", "
                            ~ delta_spent ~ ")").columns[1].values()[0] -%}
  {%- do duckdb_anon.dp_query(debit) -%}
  {{ drop_relation_if_exists(existing_relation) }}
  {% call statement('main') -%}
    CREATE TABLE {{ target_relation }} AS SELECT * FROM dp_aggregate({{ duckdb_anon.sql_literal(table_name) }}, {{ duckdb_anon.dp_value(arguments['group_by']) }},
    {%- for name in names %} {{ name }} := {{ duckdb_anon.dp_value(arguments[name]) }}{{ "," if not loop.last }}{% endfor %}) {{ duckdb_anon.release_order() }}
  {%- endcall %}
  {%- set record = duckdb_anon.dp_query("SELECT anon_dp_record_sql(" ~ duckdb_anon.sql_literal(this.identifier) ~ ", "
                             ~ duckdb_anon.sql_literal(table_name) ~ ", " ~ duckdb_anon.sql_literal(unit_table) ~ ", "
                             ~ duckdb_anon.dp_value(arguments['epsilon']) ~ ", " ~ delta_spent ~ ", "
                             ~ duckdb_anon.sql_literal(tojson(arguments)) ~ ", " ~ duckdb_anon.sql_literal(target_relation) ~ ")"
                            ).columns[0].values()[0] -%}
  {%- do duckdb_anon.dp_query(record) -%}
  {#- the spend in the append-only publish log, and the budget pointed at it -#}
  {%- do duckdb_anon.dp_query(duckdb_anon.dp_query("SELECT anon_publish_log_sql('" ~ fn ~ "', " ~ duckdb_anon.sql_literal(this.identifier)
                              ~ ", [" ~ duckdb_anon.sql_literal((this.database ~ '.' ~ this.schema ~ '.' ~ this.identifier) | lower) ~ "], [], " ~ duckdb_anon.sql_literal(unit_table)
                              ~ ", " ~ duckdb_anon.dp_value(arguments['epsilon']) ~ ", " ~ delta_spent ~ ", "
                              ~ duckdb_anon.sql_literal(tojson(arguments)) ~ ")").columns[0].values()[0]) -%}
  {%- do duckdb_anon.dp_query(duckdb_anon.dp_query("SELECT anon_dp_last_spend_sql(" ~ duckdb_anon.sql_literal(unit_table) ~ ")").columns[0].values()[0]) -%}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  -- `COMMIT` happens here
  {{ adapter.commit() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
