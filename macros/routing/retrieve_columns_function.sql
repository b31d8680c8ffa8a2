{#-
  `retrieve_columns(question, db, k := 10, exclude := [])`: the top-k columns of one database by
  cosine similarity of the question to the column documents (schema linking's vector-store
  environment; the agentic linker's `retrieve_schema` passes every column it has already seen in
  `exclude`, as lower-case 'table.column' names).

  Args:
    path: 'udf' (the question embedded by embed(), compared with kb_document_embeddings) or
      'sql' (its static vector, static_text_vectors_step, compared with kb_static_document_embeddings).

  Consumes: kb_columns, kb_document_embeddings; UDFs embed(), dbrouter_embedder() (path 'udf'), or
    kb_static_document_embeddings, kb_static_pieces, kb_static_model (path 'sql').
  Produces: the body (a query, no trailing semicolon) of the table function returning
    (rank, db_id, table_name, column_name, data_type, is_primary_key, is_foreign_key,
     references_text, column_description, value_description, sample_values, score).
-#}
{% macro retrieve_columns_function(path='udf') -%}
  {{ return(adapter.dispatch('retrieve_columns_function', 'dbrouter')(path)) }}
{%- endmacro %}

{#- One body for every adapter: the exclusion list is opened with `flatten` and compared
    lower-cased; ties order by table and column name so a run is reproducible; a NaN cosine (a
    zero vector) is no match. -#}
{% macro default__retrieve_columns_function(path='udf') -%}
{%- do dbrouter.route_path_check('retrieve_columns_function', path) -%}
{%- set maxc = dbrouter.get_var('dbrouter__max_question_chars') | int -%}
{%- set mat = dbrouter.cte_materialized() -%}
{%- if path == 'sql' %}
with recursive q_text as (
    select 0 as text_id, dbrouter_sql_content_text(left(cast(question as varchar), {{ maxc }})) as text
),
{{ dbrouter.static_text_vectors_step('q_text', 'q_vec') }},
q as {{ mat }} (
    select cast(v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v, (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model from q_vec
),
{%- else %}
with q as {{ mat }} (
    select {{ dbrouter.embed_sql("left(cast(question as varchar), " ~ maxc ~ ")") }} as v,
        {{ dbrouter.runtime_embedder() }} as model
    where nullif(trim(cast(question as varchar)), '') is not null
),
{%- endif %}
excluded as (
    select lower(cast(f.value as varchar)) as name
    from {{ dbrouter.flatten("coalesce(exclude, " ~ dbrouter.array_literal([]) ~ ")", 'f') }}
),
scored as (
    select c.db_id, c.table_name, c.column_name, c.data_type, c.is_primary_key, c.is_foreign_key, c.references_text,
        c.column_description, c.value_description, c.sample_values,
        {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_columns') }} as c
    join {{ dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') }} as d on d.document_id = 'column:' || c.column_key
    cross join q
    {# d.db_id = db repeats what the join implies (a column's document is its database's) as a
        constant the scan filters on: without it every database's column vectors were read to keep
        one database's (10,000 databases: 517k rows; 111 ms a call on the UDF path, 25 ms with it) #}
    where c.db_id = db and d.db_id = db and {{ dbrouter.allowed_database('c.db_id') }} and d.embedding_model = q.model and q.v is not null
      and lower(c.table_name || '.' || c.column_name) not in (select name from excluded)
),
ranked as (
    select *, cast(row_number() over (order by sim desc, table_name, column_name) as integer) as rank
    from scored
    where not {{ dbrouter.is_nan('sim') }}
)
select rank, db_id, table_name, column_name, data_type, is_primary_key, is_foreign_key, references_text,
    column_description, value_description, sample_values, round(cast(sim as double), 4) as score
from ranked
where rank <= greatest(coalesce(k, 10), 0)
order by rank
{%- endmacro %}
