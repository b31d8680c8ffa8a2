{#- Column type of an embedding vector of `dim` floats. -#}
{% macro vector_type(dim) -%}
  {{ return(adapter.dispatch('vector_type', 'dbrouter')(dim)) }}
{%- endmacro %}

{% macro default__vector_type(dim) -%}
{%- if dim is not number or dim < 1 -%}
  {{ exceptions.raise_compiler_error("vector_type: adapter " ~ adapter.type() ~ ", argument dim must be a positive integer, got " ~ dim) }}
{%- endif -%}
float[{{ dim }}]
{%- endmacro %}

{#- Snowflake's VECTOR type (what VECTOR_COSINE_SIMILARITY takes). -#}
{% macro snowflake__vector_type(dim) -%}
{%- if dim is not number or dim < 1 -%}
  {{ exceptions.raise_compiler_error("vector_type: adapter " ~ adapter.type() ~ ", argument dim must be a positive integer, got " ~ dim) }}
{%- endif -%}
vector(float, {{ dim }})
{%- endmacro %}
