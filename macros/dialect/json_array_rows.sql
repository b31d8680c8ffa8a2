{#- A FROM-clause item with one row per object of a JSON array text (`json_text`), with one
    VARCHAR column per name in `fields` (NULL where an object lacks it). -#}
{% macro json_array_rows(json_text, fields, alias) -%}
  {{ return(adapter.dispatch('json_array_rows', 'dbrouter')(json_text, fields, alias)) }}
{%- endmacro %}

{#- DuckDB: from_json with a structure string types the whole array in one call. -#}
{% macro default__json_array_rows(json_text, fields, alias) -%}
(select {% for f in fields %}j.o.{{ f }} as {{ f }}{{ ', ' if not loop.last }}{% endfor %}
 from (select unnest(from_json({{ json_text }},
     '[{ {%- for f in fields %}"{{ f }}":"VARCHAR"{{ "," if not loop.last }}{% endfor -%} }]')) as o) as j) as {{ alias }}
{%- endmacro %}

{% macro snowflake__json_array_rows(json_text, fields, alias) -%}
(select {% for f in fields %}j.value:{{ f }}::varchar as {{ f }}{{ ', ' if not loop.last }}{% endfor %}
 from table(flatten(input => parse_json({{ json_text }}))) as j) as {{ alias }}
{%- endmacro %}
