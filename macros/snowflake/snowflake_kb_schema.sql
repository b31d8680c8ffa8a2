{#- The schema holding the KB marts (the schema part of kb_relation): where the Snowflake route
    and retrieval functions are created. -#}
{% macro snowflake_kb_schema() -%}
{{ return(dbrouter.kb_relation('kb_document_embeddings').split('.')[0] | trim) }}
{%- endmacro %}
