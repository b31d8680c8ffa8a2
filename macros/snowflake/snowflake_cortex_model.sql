{#- The Cortex model name for the chosen Cortex function: var dbrouter__snowflake_cortex_model, or
    snowflake-arctic-embed-m-v1.5 (768) / snowflake-arctic-embed-l-v2.0 (1024). -#}
{% macro snowflake_cortex_model() -%}
{%- set given = dbrouter.get_var('dbrouter__snowflake_cortex_model') -%}
{%- if given -%}{{ return(given) }}{%- endif -%}
{{ return('snowflake-arctic-embed-m-v1.5' if dbrouter.snowflake_embedder() == 'cortex_768' else 'snowflake-arctic-embed-l-v2.0') }}
{%- endmacro %}
