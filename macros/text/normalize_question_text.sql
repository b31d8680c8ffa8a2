{#-
  SQL form of python_udfs.examples.normalize_question for an incoming question (no SQL, so no
  literals to abstract), for the pure-SQL example cascade: quoted values -> 'some value',
  constants canonicalised (canonicalize_text), time conditions -> 'for some time range', dates
  -> 'some time', numbers -> 'some number', snake_case identifiers dropped, trailing
  punctuation and leading display words ("show me", "what is") removed, lower case.

  Args:
    text: SQL expression of the question.

  Returns: the SQL expression of the normalised question (NULL for a NULL or blank question).
-#}
{% macro normalize_question_text(text) -%}
  {{ return(adapter.dispatch('normalize_question_text', 'dbrouter')(text)) }}
{%- endmacro %}

{% macro default__normalize_question_text(text) -%}
  {{ exceptions.raise_compiler_error("normalize_question_text: adapter " ~ adapter.type() ~ " is not supported yet (argument text: " ~ text ~ "); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: one nested expression of regexp_replace calls (RE2, (?i) for Python's IGNORECASE);
    Python repeats the display-word removal until nothing changes, here it runs 4 times (each
    removes one leading phrase; no question in the benchmarks starts with more than two). -#}
{% macro duckdb__normalize_question_text(text) -%}
{%- set ws = "[\\s\\p{Z}]" -%}
{%- set display = "(?i)^(?:please\\s+)?(?:(?:can|could|would)\\s+you\\s+)?(?:show(?:\\s+me)?|display|list(?:\\s+all)?|give(?:\\s+me)?|get|find(?:\\s+out)?|return|tell\\s+me|provide|retrieve|fetch|report|generate(?:\\s+a\\s+chart\\s+of)?|what\\s+(?:is|are|was|were)|which\\s+(?:is|are)|who\\s+(?:is|are))\\s+" -%}
{%- set time = "(?i)\\b(?:in|during|since|before|after|from|until|by|on|between)\\s+(?:the\\s+(?:year|month|date)\\s+)?(?:1000-10-10|year\\s+100|100)(?:\\s+(?:and|to)\\s+(?:1000-10-10|100))?" -%}
{%- set stripped = "regexp_replace(cast(" ~ text ~ " as varchar), '^" ~ ws ~ "+|" ~ ws ~ "+$', '', 'g')" -%}
{%- set ns = namespace(q="regexp_replace(replace(" ~ stripped ~ ", chr(0), 'some value'), '[\"“”‘’'']([^\"“”‘’'']{1,80})[\"“”‘’'']', 'some value', 'g')") -%}
{%- set ns.q = "coalesce(" ~ dbrouter.canonicalize_text(ns.q) ~ ", '')" -%}
{%- set ns.q = "regexp_replace(" ~ ns.q ~ ", '" ~ time ~ "', 'for some time range', 'g')" -%}
{%- set ns.q = "regexp_replace(replace(" ~ ns.q ~ ", '1000-10-10', 'some time'), '\\b100\\b', 'some number', 'g')" -%}
{%- set ns.q = "regexp_replace(" ~ ns.q ~ ", '(?i)\\b[a-z]+_[a-z_0-9]+\\b', '', 'g')" -%}
{%- set ns.q = "regexp_replace(regexp_replace(" ~ ns.q ~ ", '^" ~ ws ~ "+|" ~ ws ~ "+$', '', 'g'), '[?!.;:]+$', '')" -%}
{%- for _ in range(4) -%}
  {%- set ns.q = "regexp_replace(regexp_replace(" ~ ns.q ~ ", '" ~ display ~ "', ''), '^" ~ ws ~ "+|" ~ ws ~ "+$', '', 'g')" -%}
{%- endfor -%}
{%- set ns.q = "regexp_replace(" ~ ns.q ~ ", '(?i)^(?:the|a|an|all|me)\\s+', '')" -%}
case when regexp_full_match(coalesce(cast({{ text }} as varchar), ''), '{{ ws }}*') then null
     else coalesce(nullif(trim(regexp_replace(lower({{ ns.q }}), '{{ ws }}+', ' ', 'g')), ''), lower({{ stripped }})) end
{%- endmacro %}
