{#- The probes of var dbrouter__intent_probe this KB can use: (embedder label, probe) pairs whose
    weights have the KB's dimension (a probe is a linear model of one embedder's space, so one of
    another dimension means nothing here). Read by the mart kb_intent_probes (the weights) and by
    intent_probe_columns (norm, bias, threshold), so both see the same probes.

  Returns:
    A list of (label, {weights, norm, bias, threshold}) pairs, empty when there is none.
-#}
{% macro intent_probes() -%}
  {{ return(adapter.dispatch('intent_probes', 'dbrouter')()) }}
{%- endmacro %}

{% macro default__intent_probes() -%}
{%- set dim = dbrouter.embedding_dim() -%}
{%- set probes = dbrouter.get_var('dbrouter__intent_probe') or {} -%}
{%- if probes is not mapping -%}
  {{ exceptions.raise_compiler_error("intent_probes: adapter " ~ adapter.type() ~ ", var dbrouter__intent_probe must map embedder labels to {weights, norm, bias, threshold}, got " ~ probes) }}
{%- endif -%}
{%- set usable = [] -%}
{%- for label, p in probes.items() if p['weights'] | length == dim -%}
  {%- do usable.append((label, p)) -%}
{%- endfor -%}
{{ return(usable) }}
{%- endmacro %}
