{#-
  The name of the embedder registered on this dbt connection (the `dbrouter_embedder()` UDF of
  the profile plugin), read at run time: the one source of truth for which model made a vector.
  Documents are hashed and cached under this label, so the label can never disagree with the
  model that embedded them. The optional var `dbrouter__embedding_model` is only an assertion:
  when set, the build fails unless the connection's embedder has that name.

  Returns: the embedder name (an empty string while dbt only parses).
-#}
{% macro embedder_label() -%}
  {{ return(adapter.dispatch('embedder_label', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__embedder_label() -%}
{%- if not execute -%}{{ return('') }}{%- endif -%}
{%- set name = run_query("select dbrouter_embedder()").columns[0].values()[0] -%}
{{ return(dbrouter._checked_embedder_label(name)) }}
{%- endmacro %}

{#- DuckDB: a missing UDF would surface as a bare catalog error, so look for it first and say
    which profile setting registers it. -#}
{% macro duckdb__embedder_label() -%}
{%- if not execute -%}{{ return('') }}{%- endif -%}
{%- set found = run_query("select count(*) from duckdb_functions() where function_name = 'dbrouter_embedder'").columns[0].values()[0] -%}
{%- if found == 0 -%}
  {{ exceptions.raise_compiler_error("embedder_label: adapter " ~ adapter.type() ~ ": this connection has no dbrouter_embedder() UDF (argument: none). Add the plugin to the profile: plugins: [{module: python_udfs.plugin, config: {embedder: minilm}}] (see profiles.example.yml)") }}
{%- endif -%}
{%- set name = run_query("select dbrouter_embedder()").columns[0].values()[0] -%}
{{ return(dbrouter._checked_embedder_label(name)) }}
{%- endmacro %}

{% macro _checked_embedder_label(name) -%}
{%- set expected = dbrouter.get_var('dbrouter__embedding_model') -%}
{%- if expected and (expected | lower) != (name | lower) -%}
  {{ exceptions.raise_compiler_error("embedder_label: adapter " ~ adapter.type() ~ ": var dbrouter__embedding_model is '" ~ expected ~ "' but the profile plugin registered embedder '" ~ name ~ "'. Set the plugin's `embedder:` (or $DBROUTER_EMBEDDER) to '" ~ expected ~ "', or drop the var") }}
{%- endif -%}
{{ return(name) }}
{%- endmacro %}

{#- Snowflake: a Cortex embedder is named by its function and model (no UDF to ask); the Python
    UDF embedder answers dbrouter_embedder() like the DuckDB plugin does. -#}
{% macro snowflake__embedder_label() -%}
{%- set kind = dbrouter.snowflake_embedder() -%}
{%- if kind != 'python_udf' -%}
  {{ return(dbrouter._checked_embedder_label('cortex:' ~ dbrouter.snowflake_cortex_model())) }}
{%- endif -%}
{%- if not execute -%}{{ return('') }}{%- endif -%}
{%- set name = run_query("select dbrouter_embedder()").columns[0].values()[0] -%}
{{ return(dbrouter._checked_embedder_label(name)) }}
{%- endmacro %}
