{#-
  Table-pair reachability over an undirected join graph, with hop counts and one shortest path,
  in the style of dbt-project-evaluator's recursive_dag: a recursive CTE that walks edges and
  carries the visited path, so cycles are cut (a table already on the path is not revisited)
  and `max_hops` bounds the walk.

  Args:
    nodes: relation with (db_id, table_name)
    edges: relation with (db_id, from_table, to_table) - give both directions
    max_hops: longest path explored
  Returns: select of (db_id, from_table, to_table, hops, join_path)
-#}
{% macro table_reachability(nodes, edges, max_hops) -%}
  {{ return(adapter.dispatch('table_reachability', 'dbrouter')(nodes, edges, max_hops)) }}
{%- endmacro %}

{% macro default__table_reachability(nodes, edges, max_hops) -%}
{%- if max_hops is not number or max_hops < 0 -%}
  {{ exceptions.raise_compiler_error("table_reachability: adapter " ~ adapter.type() ~ ", argument max_hops must be a non-negative integer, got " ~ max_hops) }}
{%- endif -%}
with recursive
graph_edges as (
    select distinct db_id, from_table, to_table
    from {{ edges }}
    where from_table <> to_table
),
walk (db_id, from_table, to_table, hops, join_path) as (
    select db_id, table_name, table_name, 0, '|' || table_name || '|'
    from {{ nodes }}

    union all

    select
        walk.db_id,
        walk.from_table,
        graph_edges.to_table,
        walk.hops + 1,
        walk.join_path || graph_edges.to_table || '|'
    from walk
    join graph_edges
      on graph_edges.db_id = walk.db_id
     and graph_edges.from_table = walk.to_table
    where walk.hops < {{ max_hops }}
      and {{ dbt.position("'|' || graph_edges.to_table || '|'", "walk.join_path") }} = 0
),
ranked as (
    select *,
        row_number() over (partition by db_id, from_table, to_table order by hops, join_path) as rn
    from walk
)
select db_id, from_table, to_table, hops, join_path
from ranked
where rn = 1
{%- endmacro %}

{#- DuckDB: the portable walk enumerates every simple path up to max_hops, which is exponential on
    dense join graphs (a 10,000-database synthetic repository filled the disk with spilled paths).
    DuckDB's `USING KEY` recursive CTEs keep one row per (db, from, to) and let the recursive step
    see all rows found so far (`recurring.walk`), so this is a breadth-first search: each pair is
    reached once, at its shortest hop count, with the alphabetically first shortest path. -#}
{% macro duckdb__table_reachability(nodes, edges, max_hops) -%}
{%- if max_hops is not number or max_hops < 0 -%}
  {{ exceptions.raise_compiler_error("table_reachability: adapter " ~ adapter.type() ~ ", argument max_hops must be a non-negative integer, got " ~ max_hops) }}
{%- endif -%}
with recursive
graph_edges as (
    select distinct db_id, from_table, to_table
    from {{ edges }}
    where from_table <> to_table
),
walk (db_id, from_table, to_table, hops, join_path) using key (db_id, from_table, to_table) as (
    select db_id, table_name, table_name, 0, '|' || table_name || '|'
    from {{ nodes }}

    union

    select db_id, from_table, to_table, hops, join_path
    from (
        select
            walk.db_id,
            walk.from_table,
            graph_edges.to_table,
            walk.hops + 1 as hops,
            walk.join_path || graph_edges.to_table || '|' as join_path
        from walk
        join graph_edges
          on graph_edges.db_id = walk.db_id
         and graph_edges.from_table = walk.to_table
        where walk.hops < {{ max_hops }}
          and not exists (
              select 1 from recurring.walk as seen
              where seen.db_id = walk.db_id and seen.from_table = walk.from_table
                and seen.to_table = graph_edges.to_table)
    )
    qualify row_number() over (partition by db_id, from_table, to_table order by join_path) = 1
)
select db_id, from_table, to_table, hops, join_path
from walk
{%- endmacro %}
