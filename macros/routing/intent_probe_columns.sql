{#- The intent probe's select-list over the question's vector: `intent_score` (the probe's logit:
    is this a question one asks a database at all?) and `intent_floor` (its refusal threshold), both
    NULL when no probe of var dbrouter__intent_probe is for this vector's embedder (or for this
    KB's dimension): a probe is a linear model of the unit vector of one embedder's space
    (python -m dbrouter.tune.intent, fitted on benchmark train questions and the package's off-topic
    questions), so it means nothing in another space.

  The weights are read from kb_intent_probes (one row per label, joined by the caller on the
  vector's label): as literals they were 384 constants per probe in every question's SQL. The
  norm, bias and threshold stay literals, so the arithmetic is what it was.

  Args:
    vector: SQL expression of the question's vector (any length: cosine normalises it).
    model: SQL expression of the embedder label the vector was made with.
    weights: SQL expression of the probe's weight vector (kb_intent_probes.weights of the row
      whose embedder is `model`; NULL when there is none).
-#}
{% macro intent_probe_columns(vector, model, weights) -%}
  {{ return(adapter.dispatch('intent_probe_columns', 'dbrouter')(vector, model, weights)) }}
{%- endmacro %}

{#- score = w . v / |v| + bias = cosine(v, w) * |w| + bias: cosine_similarity exists on every
    adapter and normalises the pure-SQL path's summed piece vectors. -#}
{% macro default__intent_probe_columns(vector, model, weights) -%}
{%- set usable = dbrouter.intent_probes() -%}
{%- if usable -%}
case
{%- for label, p in usable %}
    when {{ model }} = '{{ label }}' then {{ dbrouter.cosine_similarity(vector, weights) }} * {{ p['norm'] | float }} + {{ p['bias'] | float }}
{%- endfor %}
end as intent_score,
case
{%- for label, p in usable %}
    when {{ model }} = '{{ label }}' then {{ p['threshold'] | float }}
{%- endfor %}
end as intent_floor
{%- else -%}
cast(null as double) as intent_score, cast(null as double) as intent_floor
{%- endif -%}
{%- endmacro %}
