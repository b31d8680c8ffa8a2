{#- The schema score as an aggregate over ranked document rows (doc_kind, sim, rn: the row's rank
    by similarity within its kind): the database document's similarity, the mean of the top
    dbrouter__top_tables tables and of the top dbrouter__top_columns columns. Read by
    probe_schema_scores' SQL body and by kb_routing_calibration's example gap, so the two score
    alike. -#}
{% macro ranked_schema_score() -%}
{{ dbrouter.schema_score(
    "max(case when doc_kind = 'database' then sim end)",
    "avg(case when doc_kind = 'table' and rn <= " ~ (dbrouter.get_var('dbrouter__top_tables') | int) ~ " then sim end)",
    "avg(case when doc_kind = 'column' and rn <= " ~ (dbrouter.get_var('dbrouter__top_columns') | int) ~ " then sim end)") }}
{%- endmacro %}
