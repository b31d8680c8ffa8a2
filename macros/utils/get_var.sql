{#-
  A `dbrouter__*` var as the caller's project sets it, else the package default.

  dbt resolves `var()` in the context of the node or hook being rendered: inside this package's
  models the defaults of its dbt_project.yml apply, but a consuming project's hook or
  `run-operation` that calls a dbrouter macro (e.g. `dbrouter.create_route_functions()`) does not
  see them and fails with "Required var ... not found". Macros therefore read vars through this
  one. The defaults below mirror the `vars:` of dbt_project.yml (where they are documented);
  tests/unit/test_dbt_vars.py fails when the two disagree. The fitted ranker's two vars default
  to the generated macros/tuned/fitted_ranker.sql, dbrouter__intent_probe to the generated
  macros/tuned/fitted_intent.sql; they are set in neither file.
-#}
{% macro get_var(name) -%}
  {{ return(adapter.dispatch('get_var', 'dbrouter')(name)) }}
{%- endmacro %}

{% macro default__get_var(name) -%}
{#- the intent probe's weights, from the generated macros/tuned/fitted_intent.sql (read only when asked for:
    768 numbers) -#}
{%- if name == 'dbrouter__intent_probe' -%}
  {{ return(var(name, dbrouter.fitted_intent())) }}
{%- endif -%}
{%- set defaults = {
    'dbrouter__raw_schema': 'dbrouter_raw',
    'dbrouter__user_schema': 'dbrouter_user',
    'dbrouter__llm_schema': 'dbrouter_llm',
    'dbrouter__kb_schema': 'dbrouter',
    'dbrouter__embedding_model': none,
    'dbrouter__embedding_dim': 384,
    'dbrouter__weight_database': 0.5,
    'dbrouter__weight_table': 0.5,
    'dbrouter__weight_column': 2.0,
    'dbrouter__weight_example': 1.0,
    'dbrouter__calibration_probes': 300,
    'dbrouter__trust_examples': none,
    'dbrouter__top_tables': 3,
    'dbrouter__top_columns': 3,
    'dbrouter__shortlist_k': 10,
    'dbrouter__first_stage_k': 50,
    'dbrouter__vector_index': True,
    'dbrouter__term_postings_min_rows': 25000,
    'dbrouter__lexical_k1': 1.2,
    'dbrouter__lexical_b': 0.75,
    'dbrouter__lexical_rrf_k': 60,
    'dbrouter__phrase_threshold': 0.5,
    'dbrouter__phrase_columns_per_span': 50,
    'dbrouter__coverage_penalty': 2,
    'dbrouter__example_floor': 0.6,
    'dbrouter__example_votes': 10,
    'dbrouter__paraphrase_min': 0.9,
    'dbrouter__paraphrase_min_static': 0.97,
    'dbrouter__abstain_in_repository': 0.02,
    'dbrouter__abstain_offtopic_quantile': 0.5,
    'dbrouter__phrase_max_words': 3,
    'dbrouter__max_hops': 6,
    'dbrouter__reachability_max_tables': 2000,
    'dbrouter__sbr_window': 2,
    'dbrouter__max_question_chars': 2000,
    'dbrouter__snowflake_embedder': 'cortex_768',
    'dbrouter__snowflake_cortex_model': none,
    'dbrouter__snowflake_python_embedder': 'minilm',
    'dbrouter__snowflake_stage': 'dbrouter_stage',
    'dbrouter__snowflake_component_hops': 20,
} -%}
{#- the fitted ranker's values, from the generated macros/tuned/fitted_ranker.sql -#}
{%- do defaults.update({'dbrouter__ranker_weights': dbrouter.fitted_ranker()['weights'],
                        'dbrouter__abstain_below': dbrouter.fitted_ranker()['abstain_below']}) -%}
{%- if name not in defaults -%}
  {{ exceptions.raise_compiler_error("get_var: adapter " ~ adapter.type() ~ ", argument name '" ~ name ~ "' is not a dbrouter var (known: " ~ defaults.keys() | sort | join(', ') ~ ")") }}
{%- endif -%}
{{ return(var(name, defaults[name])) }}
{%- endmacro %}
