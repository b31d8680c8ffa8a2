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

{% macro default__table_components(nodes, edges) -%}
{%- if not nodes or not edges -%}
  {{ exceptions.raise_compiler_error("table_components: adapter " ~ adapter.type() ~ ", arguments nodes and edges must name relations, got " ~ nodes ~ " / " ~ edges) }}
{%- endif -%}
with recursive
component_edges as (
    select distinct db_id, from_table, to_table
    from {{ edges }}
    where from_table <> to_table
),
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
