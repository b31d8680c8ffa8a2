{#-
  Routing step 2 with mappings given (the LLM path): the phrase -> column mappings arrive as a
  JSON array [{db_id, phrase, table_name, column_name}]; a NULL column is an N/A phrase. The
  semantic score still uses the phrase embedder's cosine of each phrase to its column. Each
  database is scored over its own phrases (the method's per-database mapping); a column unknown
  to the KB counts as N/A, and a candidate absent from the JSON gets every phrase named for the
  others as N/A (before, it had no phrases, hence coverage 1, and outranked every database
  with real mappings).

  Args:
    mappings: SQL expression of the JSON text (NULL = no mappings).
    path: 'udf' (phrase vectors from embed_phrase()) or 'sql' (from static_text_vectors_step).

  Consumes: CTE candidates (db_id) from route_shortlist_step; kb_column_phrases;
    UDFs embed_phrase(), dbrouter_embedder() (path 'udf') or kb_static_pieces, kb_static_model
    (path 'sql').
  Produces CTEs: given, given_phrases, given_words, phrase_vectors, given_mappings (internal), then
    cand_words and mapped as defined by route_mapping_contract (is_exact is always false).
-#}
{% macro route_map_from_json_step(mappings, path='udf') -%}
  {{ return(adapter.dispatch('route_map_from_json_step', 'dbrouter')(mappings, path)) }}
{%- endmacro %}

{#- One body for every adapter: the JSON array is parsed (json_array_rows) and each mapping given
    stands. A phrase the phrase model knows no token of has a zero vector and a NaN cosine; the
    mapping was given, so it stands, with similarity 0 (NaN would poison the semantic score's mean). -#}
{% macro default__route_map_from_json_step(mappings, path='udf') -%}
{%- do dbrouter.route_path_check('route_map_from_json_step', path) -%}
{%- set mat = dbrouter.cte_materialized() -%}
given as {{ mat }} (
    select m.db_id, m.phrase, m.table_name, m.column_name
    from {{ dbrouter.json_array_rows("coalesce(" ~ mappings ~ ", '[]')", ['db_id', 'phrase', 'table_name', 'column_name'], 'm') }}
    where m.phrase is not null and trim(m.phrase) <> ''
),
given_phrases as {{ mat }} (
    select distinct g.db_id, lower(trim(g.phrase)) as phrase
    from given as g join candidates as c on c.db_id = g.db_id
),
given_words as {{ mat }} (
    select db_id, cast(dense_rank() over (partition by db_id order by phrase) - 1 as integer) as word_index, phrase
    from (
        select db_id, phrase from given_phrases
        union
        select c.db_id, gp.phrase
        from candidates as c cross join given_phrases as gp
        where not exists (select 1 from given_phrases as own where own.db_id = c.db_id)
    ) as phrases
),
{%- if path == 'sql' %}
phrase_texts as (
    select distinct phrase as text_id, phrase as text from given_phrases
),
{{ dbrouter.static_text_vectors_step('phrase_texts', 'phrase_static') }},
phrase_vectors as (
    select t.text_id as phrase, cast(s.v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v
    from phrase_texts as t left join phrase_static as s on s.text_id = t.text_id
),
{%- else %}
phrase_vectors as (
    select phrase, {{ dbrouter.embed_phrase_sql('phrase') }} as v from (select distinct phrase from given_phrases) as distinct_phrases
),
{%- endif %}
given_mappings as (
    select gw.db_id, gw.word_index, c.table_name, c.column_name, c.component, c.declared_component,
        coalesce(nullif({{ dbrouter.cosine_similarity('c.embedding', 'pv.v') }}, 'NaN'::float), 0) as similarity,
        gw.phrase as span, false as is_exact, 'given' as match_kind
    from given as g
    join given_words as gw on gw.db_id = g.db_id and gw.phrase = lower(trim(g.phrase))
    join phrase_vectors as pv on pv.phrase = gw.phrase
    join {{ dbrouter.kb_relation('kb_column_phrases') }} as c
      on c.db_id = g.db_id and lower(c.table_name) = lower(g.table_name) and lower(c.column_name) = lower(g.column_name)
     and c.phrase_model = {{ dbrouter._phrase_model(path) }}
),
{{ dbrouter.route_mapping_contract('given_words', 'given_mappings') }}
{%- endmacro %}
