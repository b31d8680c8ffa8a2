{#- Post-hook of kb_example_thresholds: prints the calibrated thresholds in the build log. -#}
{% macro log_example_thresholds() -%}
  {%- if execute -%}
    {%- set r = run_query("select n_examples, normalized_threshold, main_clause_threshold, expanded_threshold from " ~ this) -%}
    {%- set row = r.rows[0] -%}
    {%- do log("dbrouter: example cascade thresholds from " ~ row[0] ~ " examples: normalized >= "
               ~ (row[1] | round(4)) ~ ", main clause >= " ~ (row[2] | round(4)) ~ ", expanded >= "
               ~ (row[3] | round(4)), info=True) -%}
  {%- endif -%}
  select 1
{%- endmacro %}
