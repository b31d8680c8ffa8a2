{#-
  The contract every routing step-2 variant (map-by-embedding, map-from-JSON) ends with: it
  turns the variant's own CTEs into the two CTEs the scoring step consumes, with exactly these
  columns, so a variant cannot drift from the other.

  Args:
    words_cte: a CTE of the variant with (db_id, word_index, phrase).
    mappings_cte: a CTE of the variant with one row per phrase -> column mapping:
      (db_id, word_index, table_name, column_name, component, declared_component,
       similarity, span, is_exact, match_kind).

  Produces CTEs:
    cand_words (db_id, word_index INTEGER, phrase)       every phrase of every candidate database
    mapped     (db_id, word_index INTEGER, table_name, column_name, component, declared_component,
                similarity, span, is_exact BOOLEAN, match_kind VARCHAR)   mappings at or above the threshold;
                match_kind: 'name', 'value', 'similar' (embedding cosine) or 'given' (JSON)
-#}
{% macro route_mapping_contract(words_cte, mappings_cte) -%}
  {{ return(adapter.dispatch('route_mapping_contract', 'dbrouter')(words_cte, mappings_cte)) }}
{%- endmacro %}

{% macro default__route_mapping_contract(words_cte, mappings_cte) -%}
cand_words as {{ dbrouter.cte_materialized() }} (
    select db_id, cast(word_index as integer) as word_index, phrase
    from {{ words_cte }}
),
mapped as {{ dbrouter.cte_materialized() }} (
    select db_id, cast(word_index as integer) as word_index, table_name, column_name, component,
        declared_component, similarity, span, is_exact, match_kind
    from {{ mappings_cte }}
)
{%- endmacro %}
