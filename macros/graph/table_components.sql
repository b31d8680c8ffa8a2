{#-
  Connected part of every table in its database's undirected join graph, named by the smallest
  table name in the part. Unlike `table_reachability` this walk has no hop limit: it carries only
  (db_id, table_name, reached) and the recursive UNION drops rows already found, so it ends after
  at most (tables in the part) steps whatever the part's shape - the two ends of a 9-table join
  chain get the same label although they are 8 hops apart.

  Args:
    nodes: relation with (db_id, table_name)
    edges: relation with (db_id, from_table, to_table) - give both directions
  Returns: select of (db_id, table_name, component), one row per node
-#}
{% macro table_components(nodes, edges) -%}
  {{ return(adapter.dispatch('table_components', 'dbrouter')(nodes, edges)) }}
{%- endmacro %}

{#- The walk's edges (CTE component_edges, self-loops dropped), once the arguments are checked. -#}
{% macro _component_edges(nodes, edges) -%}
{%- if not nodes or not edges -%}
  {{ exceptions.raise_compiler_error("table_components: adapter " ~ adapter.type() ~ ", arguments nodes and edges must name relations, got " ~ nodes ~ " / " ~ edges) }}
{%- endif -%}
component_edges as (
    select distinct db_id, from_table, to_table
    from {{ edges }}
    where from_table <> to_table
)
{%- endmacro %}

{% macro default__table_components(nodes, edges) -%}
with recursive
{{ dbrouter._component_edges(nodes, edges) }},
reached (db_id, table_name, reached_table) as (
    select db_id, table_name, table_name
    from {{ nodes }}

    union

    select reached.db_id, reached.table_name, component_edges.to_table
    from reached
    join component_edges
      on component_edges.db_id = reached.db_id
     and component_edges.from_table = reached.reached_table
)
select db_id, table_name, min(reached_table) as component
from reached
group by db_id, table_name
{%- endmacro %}

{#- DuckDB: the portable walk carries every (table, reached table) pair, n^2 rows for a part of n
    tables - a warehouse dataset of 10,000 tables in one part filled the disk. DuckDB's `USING KEY`
    recursive CTEs keep one row per key and let the step read every row found so far
    (`recurring.parts`), so this is label propagation: every table starts as its own label, and a
    table whose label got smaller passes it to its neighbours that hold a larger one. It ends
    when no label changes (after at most the part's diameter steps), with the smallest table name
    of each part, in rows bounded by the edges per step. -#}
{% macro duckdb__table_components(nodes, edges) -%}
with recursive
{{ dbrouter._component_edges(nodes, edges) }},
parts (db_id, table_name, component) using key (db_id, table_name) as (
    select db_id, table_name, table_name
    from {{ nodes }}

    union

    select e.db_id, e.to_table, min(changed.component)
    from parts as changed
    join component_edges as e
      on e.db_id = changed.db_id
     and e.from_table = changed.table_name
    join recurring.parts as now
      on now.db_id = e.db_id
     and now.table_name = e.to_table
    group by e.db_id, e.to_table, now.component
    having min(changed.component) < now.component
)
select db_id, table_name, component
from parts
{%- endmacro %}

{#- Snowflake: a recursive CTE must use UNION ALL, so rows already found cannot be dropped and
    the walk above would cycle. The components are read off the reachability walk instead
    (table_reachability, which carries the visited path and stops at a hop bound): a table's part
    is the smallest table it reaches. That walk enumerates simple paths, exponential on dense join
    graphs, so it is bounded by var dbrouter__snowflake_component_hops (default 20), beyond which
    two tables of one part may get different labels. -#}
{% macro snowflake__table_components(nodes, edges) -%}
{%- set max_hops = dbrouter.get_var('dbrouter__snowflake_component_hops') -%}
{%- if not nodes or not edges or max_hops is not number or max_hops < 1 -%}
  {{ exceptions.raise_compiler_error("table_components: adapter " ~ adapter.type() ~ ", arguments nodes and edges must name relations and var dbrouter__snowflake_component_hops must be >= 1, got " ~ nodes ~ " / " ~ edges ~ " / " ~ max_hops) }}
{%- endif -%}
select db_id, from_table as table_name, min(to_table) as component
from ({{ dbrouter.table_reachability(nodes, edges, max_hops) }}) as reachable
group by db_id, from_table
{%- endmacro %}
