{#- The text at a path of a JSON value: `steps` are object keys (strings) and array positions
    (0-based numbers), e.g. json_at('r.ranking', [0, 'evidence', 'abstain']). -#}
{% macro json_at(expr, steps) -%}
  {{ return(adapter.dispatch('json_at', 'dbrouter')(expr, steps)) }}
{%- endmacro %}

{% macro default__json_at(expr, steps) -%}
({{ expr }}{% for s in steps %}{{ '->>' if loop.last else '->' }}{{ s if s is number else "'" ~ s ~ "'" }}{% endfor %})
{%- endmacro %}

{% macro snowflake__json_at(expr, steps) -%}
{{ expr }}{% for s in steps %}{{ '[' ~ s ~ ']' if s is number else ':' ~ s }}{% endfor %}::varchar
{%- endmacro %}
