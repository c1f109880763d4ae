{#-
    Rendering values into SQL text. User input (relation names, column names, modes) never reaches the SQL
    unescaped: strings become literals with their single quotes doubled (DuckDB strings have no backslash
    escapes, so that is the whole escape), names become identifiers with their double quotes doubled.
-#}

{#- A SQL string literal of any value: a relation renders as its quoted name, e.g. '"db"."main"."t"'. -#}
{% macro sql_literal(value) -%}
    '{{ (value | string) | replace("'", "''") }}'
{%- endmacro %}

{#- A SQL list literal of strings: ['age', 'zip']. -#}
{% macro sql_list(values) -%}
    [{% for value in values %}{{ duckdb_anon.sql_literal(value) }}{{ ", " if not loop.last }}{% endfor %}]
{%- endmacro %}

{#- A SQL MAP literal of strings: MAP {'age': 'age_hierarchy'} (a relation value renders as its quoted name). -#}
{% macro sql_map(mapping) -%}
    MAP { {%- for key, value in mapping.items() %}{{ duckdb_anon.sql_literal(key) }}: {{ duckdb_anon.sql_literal(value) }}{{ ", " if not loop.last }}{% endfor -%} }
{%- endmacro %}

{#- A quoted identifier: "age", "odd ""name""". -#}
{% macro sql_identifier(name) -%}
    "{{ (name | string) | replace('"', '""') }}"
{%- endmacro %}

{#- Comma-separated quoted identifiers. -#}
{% macro sql_identifiers(names) -%}
    {% for name in names %}{{ duckdb_anon.sql_identifier(name) }}{{ ", " if not loop.last }}{% endfor %}
{%- endmacro %}

{#-
    Argument checks at compile time, so a mistake in a model or a schema.yml names the macro and the argument
    instead of surfacing as a SQL error. A bare string where a list is expected is the usual slip:
    ['age'] is one column, 'age' would be iterated letter by letter.
-#}
{% macro check_names(fn, arg, names) -%}
    {%- if names is string or names is mapping or names is not iterable or (names | length) == 0 -%}
        {{ exceptions.raise_compiler_error(fn ~ "(): argument '" ~ arg ~ "' must be a non-empty list of column names, got " ~ names) }}
    {%- endif -%}
    {%- for name in names if name is not string or (name | length) == 0 -%}
        {{ exceptions.raise_compiler_error(fn ~ "(): argument '" ~ arg ~ "' must hold column names (strings), got " ~ name) }}
    {%- endfor -%}
{%- endmacro %}

{% macro check_name(fn, arg, name) -%}
    {%- if name is not string or (name | length) == 0 -%}
        {{ exceptions.raise_compiler_error(fn ~ "(): argument '" ~ arg ~ "' must be a column name, got " ~ name) }}
    {%- endif -%}
{%- endmacro %}

{#- An integer >= minimum (booleans are not integers here). -#}
{% macro check_integer(fn, arg, value, minimum) -%}
    {%- if value is not integer or value < minimum -%}
        {{ exceptions.raise_compiler_error(fn ~ "(): argument '" ~ arg ~ "' must be an integer >= " ~ minimum ~ ", got " ~ value) }}
    {%- endif -%}
{%- endmacro %}

{#- The storage order of every release: the text of duckdb_anon.publishing.order_key() (a test holds the two
    equal), so a release says nothing of its source's order. -#}
{% macro release_order() -%}
ORDER BY hash(*COLUMNS(*))
{%- endmacro %}
