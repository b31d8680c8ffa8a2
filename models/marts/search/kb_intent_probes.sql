{#- The intent probes' weight vectors (var dbrouter__intent_probe, the generated
    macros/tuned/fitted_intent.sql), one row per embedder label whose probe has this KB's dimension.
    A table rather than literals in the routing query: 384 constants per probe in every question's
    SQL cost ~12 ms of binding and constant folding a question (issue 36); the routing query joins
    this one row by the question vector's label (route_shortlist_step, intent_probe_columns).
    The weights are cast exactly as the literals were, so the probe's score is the same float. -#}
{%- set dim = dbrouter.embedding_dim() -%}
{%- set usable = dbrouter.intent_probes() -%}
{%- for label, p in usable %}
select cast('{{ label }}' as {{ dbt.type_string() }}) as embedder,
    cast([{{ p['weights'] | join(', ') }}] as {{ dbrouter.vector_type(dim) }}) as weights
{% if not loop.last %}union all
{% endif -%}
{%- else %}
select cast(null as {{ dbt.type_string() }}) as embedder, cast(null as {{ dbrouter.vector_type(dim) }}) as weights
where 1 = 0
{%- endfor %}
