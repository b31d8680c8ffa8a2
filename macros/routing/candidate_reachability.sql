{#-
  The join paths the re-rank shows, from each candidate's first chosen table: a SELECT of
  (db_id, from_table, to_table, hops, join_path) with kb_table_reachability's rows and format.

  Args:
    sources: a relation or CTE of (db_id, table_name): the tables the paths start from.
    path: 'udf' or 'sql' (route_paths).
-#}
{% macro candidate_reachability(sources, path='sql') -%}
  {{ return(adapter.dispatch('candidate_reachability', 'dbrouter')(sources, path)) }}
{%- endmacro %}

{#- The stored pairs (Snowflake: a recursive walk inside a SQL UDTF is not what its functions run). -#}
{% macro default__candidate_reachability(sources, path='sql') -%}
select r.db_id, r.from_table, r.to_table, r.hops, r.join_path
from {{ dbrouter.kb_relation('kb_table_reachability') }} as r
join {{ sources }} as s on s.db_id = r.db_id and s.table_name = r.from_table
{%- endmacro %}

{#- DuckDB walks the join graph of the candidates alone, from their first chosen table, with the
    same macro kb_table_reachability is built with (a breadth-first walk from one table does not
    depend on the others): a scan of kb_table_reachability read every pair of every database
    (1.19M rows, 200 ms at 10,000 databases) to use a few; the candidates' edges are a few hundred. -#}
{% macro duckdb__candidate_reachability(sources, path='sql') -%}
{#- the candidates' edges are read once, before the walk: inside it they were scanned again at every
    hop. They come from kb_walk_edges, which leaves out databases wider than
    dbrouter__reachability_max_tables (as kb_table_reachability does): a 20,000-table warehouse
    dataset had 4.4M implied edges, and walking them took 12 s a question; its join path is left out
    of the evidence, its connectivity still comes from kb_table_components.
    The UDF path (var dbrouter__vector_index) walks the same edges held in the UDF process
    (dbrouter_join_paths, python_udfs/join_paths.py), which gives the walk's rows: the scan of every
    edge for the candidates' was 8 ms of a held question at 10,000 synthetic databases (210k edges),
    the recursive CTE 3-4 ms more. -#}
{%- if path == 'udf' and dbrouter.get_var('dbrouter__vector_index') %}
select u.p.db_id as db_id, u.p.from_table as from_table, u.p.to_table as to_table, u.p.hops as hops,
    trim(replace(u.p.join_path, '|', ' > '), ' >') as join_path
from (select unnest(dbrouter_join_paths('{{ dbrouter.kb_relation('kb_walk_edges') }}',
          (select list(db_id order by db_id, table_name) from {{ sources }}),
          (select list(table_name order by db_id, table_name) from {{ sources }}),
          {{ dbrouter.get_var('dbrouter__max_hops') | int }})) as p) as u
{%- else %}
with candidate_edges as materialized (
    select e.db_id, e.from_table, e.to_table
    from {{ dbrouter.kb_relation('kb_walk_edges') }} as e
    join (select distinct db_id from {{ sources }}) as c on c.db_id = e.db_id
)
select db_id, from_table, to_table, hops, trim(replace(join_path, '|', ' > '), ' >') as join_path
from (
    {{ dbrouter.table_reachability(sources, 'candidate_edges', dbrouter.get_var('dbrouter__max_hops') | int) }}
) as walked
{%- endif %}
{%- endmacro %}
