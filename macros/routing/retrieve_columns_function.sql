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

{% macro default__retrieve_columns_function(path='udf') -%}
  {{ exceptions.raise_compiler_error("retrieve_columns_function: adapter " ~ adapter.type() ~ " is not supported yet (argument: none); DuckDB and Snowflake are supported") }}
{%- endmacro %}

{#- DuckDB: list_contains over the lower-cased exclusion list keeps the macro one statement;
    ties order by table and column name so a run is reproducible. -#}
{% macro duckdb__retrieve_columns_function(path='udf') -%}
{%- if path == 'sql' %}
with recursive q_text as (
    select 0 as text_id, dbrouter_sql_content_text(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})) as text
),
{{ dbrouter.static_text_vectors_step('q_text', 'q_vec') }},
q as materialized (
    select cast(v_list as float[{{ dbrouter.get_var('dbrouter__embedding_dim') | int }}]) as v, (select vector_label from {{ dbrouter.kb_relation('kb_static_model') }}) as model from q_vec
),
{%- else %}
with q as materialized (
    select embed(left(cast(question as varchar), {{ dbrouter.get_var('dbrouter__max_question_chars') | int }})) as v,
        dbrouter_embedder() as model
    where nullif(trim(cast(question as varchar)), '') is not null
),
{%- endif %}
scored as (
    select c.*, {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_columns') }} as c
    join {{ dbrouter.kb_relation('kb_static_document_embeddings' if path == 'sql' else 'kb_document_embeddings') }} as d on d.document_id = 'column:' || c.column_key
    cross join q
    where c.db_id = db and d.embedding_model = q.model and q.v is not null
      and not list_contains(list_transform(coalesce(exclude, []), lambda x: lower(cast(x as varchar))),
                            lower(c.table_name || '.' || c.column_name))
)
select
    cast(row_number() over (order by sim desc, table_name, column_name) as integer) as rank,
    db_id, table_name, column_name, data_type, is_primary_key, is_foreign_key, references_text,
    column_description, value_description, sample_values, round(cast(sim as double), 4) as score
from scored
where not isnan(sim)
order by sim desc, table_name, column_name
limit greatest(coalesce(k, 10), 0)
{%- endmacro %}

{#- Snowflake: a SQL UDTF; the exclusion list is an ARRAY of 'table.column' names compared
    lower-cased (ARRAY_CONTAINS over a lower-cased copy), and LIMIT takes no expression, so the
    rank is filtered. -#}
{% macro snowflake__retrieve_columns_function(path='udf') -%}
{%- if path != 'udf' -%}
  {{ exceptions.raise_compiler_error("retrieve_columns_function: adapter " ~ adapter.type() ~ ", argument path '" ~ path ~ "': Snowflake has the UDF path only (the pure-SQL path is DuckDB's)") }}
{%- endif -%}
with q as (
    select {{ dbrouter.embed_sql("left(question, " ~ (dbrouter.get_var('dbrouter__max_question_chars') | int) ~ ")") }} as v,
        '{{ dbrouter.embedder_label() }}' as model
    where nullif(trim(question), '') is not null
),
excluded as (
    select lower(f.value::varchar) as name from table(flatten(input => coalesce(exclude, array_construct()))) as f
),
scored as (
    select c.db_id, c.table_name, c.column_name, c.data_type, c.is_primary_key, c.is_foreign_key, c.references_text,
        c.column_description, c.value_description, c.sample_values,
        {{ dbrouter.cosine_similarity('d.embedding', 'q.v') }} as sim
    from {{ dbrouter.kb_relation('kb_columns') }} as c
    join {{ dbrouter.kb_relation('kb_document_embeddings') }} as d on d.document_id = 'column:' || c.column_key
    cross join q
    where c.db_id = db and d.embedding_model = q.model and q.v is not null
      and lower(c.table_name || '.' || c.column_name) not in (select name from excluded)
),
ranked as (
    select *, cast(row_number() over (order by sim desc, table_name, column_name) as integer) as rank
    from scored
    where sim <> 'NaN'::float
)
select rank, db_id, table_name, column_name, data_type, is_primary_key, is_foreign_key, references_text,
    column_description, value_description, sample_values, round(cast(sim as double), 4) as score
from ranked
where rank <= greatest(coalesce(k, 10), 0)
{%- endmacro %}
