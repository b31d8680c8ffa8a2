{#-
  SQL form of python_udfs.text.canonicalize, for the pure-SQL path: dates become '1000-10-10'
  and other numbers '100', white space is folded.

  Args:
    text: SQL expression of the text (NULL gives NULL).

  Returns: the SQL expression of the canonical text.
-#}
{% macro canonicalize_text(text) -%}
  {{ return(adapter.dispatch('canonicalize_text', 'dbrouter')(text)) }}
{%- endmacro %}

{% macro default__canonicalize_text(text) -%}
  {{ exceptions.raise_compiler_error("canonicalize_text: adapter " ~ adapter.type() ~ " is not supported yet (argument text: " ~ text ~ "); DuckDB is supported") }}
{%- endmacro %}

{#- DuckDB: RE2 has no look-around, which the number pattern uses ("not after a word character
    or a dot", "not before a word character"). Both become consumed characters, and so that a
    consumed separator cannot hide the next number, a marker (U+E000) is put after every
    separator and before every sign first, and removed at the end. Dates become U+E001 until
    the numbers are done (Python splits the text around the date placeholder for the same
    reason). Digits are ASCII digits and word boundaries ASCII ones, where Python's are
    Unicode. -#}
{% macro duckdb__canonicalize_text(text) -%}
{%- set months = "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec" -%}
{%- set dates = [
    "\\b[0-9]{4}[-/.][0-9]{1,2}(?:[-/.][0-9]{1,2})?(?:[ T][0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?)?\\b",
    "\\b[0-9]{1,2}[-/.][0-9]{1,2}[-/.][0-9]{2,4}\\b",
    "(?i)\\b(?:[0-9]{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?)?(?:" ~ months ~ ")\\.?(?:\\s+[0-9]{1,2}(?:st|nd|rd|th)?,?)?(?:\\s+[0-9]{4})\\b",
    "(?i)\\b[0-9]{1,2}(?:st|nd|rd|th)?\\s+(?:of\\s+)?(?:" ~ months ~ ")\\b",
    "(?i)\\b(?:" ~ months ~ ")\\.?\\s+[0-9]{1,2}(?:st|nd|rd|th)\\b",
] -%}
{%- set ns = namespace(expr="cast(" ~ text ~ " as varchar)") -%}
{%- for pattern in dates -%}
  {%- set ns.expr = "regexp_replace(" ~ ns.expr ~ ", '" ~ pattern ~ "', chr(57345), 'g')" -%}
{%- endfor -%}
trim(regexp_replace(replace(replace(
    regexp_replace(
        regexp_replace(regexp_replace({{ ns.expr }},
            '([^\p{L}\p{N}_.,%+\-])', '\1' || chr(57344), 'g'),
            '([-+])', chr(57344) || '\1', 'g'),
        '(^|[^\p{L}\p{N}_.])([-+]?[0-9]+(?:[.,][0-9]+)*(?:st|nd|rd|th|%)?)($|[^\p{L}\p{N}_])', '\1100\3', 'g'),
    chr(57344), ''), chr(57345), '1000-10-10'), '[\s\p{Z}]+', ' ', 'g'))
{%- endmacro %}
