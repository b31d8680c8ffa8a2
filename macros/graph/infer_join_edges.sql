{#-
  Implied join edges, found by two naming rules (each edge records its rule):
    references_table_name : column `<other>_id` / `<other>id` (also singular `<other>` minus 's')
                            pointing at <other>'s single-column primary key;
    matches_primary_key   : column named exactly like another table's single-column primary key
                            (generic key names such as `id` are excluded: they would join everything).
  Both require compatible type families (or one side of family 'other').

  Args:
    columns: relation with (db_id, table_name, column_name, type_family, is_single_primary_key)
  Returns: select of (db_id, table_name, column_name, ref_table_name, ref_column_name, rule),
    one row per edge, declared foreign keys included (int_join_edges_unioned removes those).
-#}
{% macro infer_join_edges(columns) -%}
  {{ return(adapter.dispatch('infer_join_edges', 'dbrouter')(columns)) }}
{%- endmacro %}

{% macro default__infer_join_edges(columns) -%}
{%- if not columns -%}
  {{ exceptions.raise_compiler_error("infer_join_edges: adapter " ~ adapter.type() ~ ", argument columns must name a relation, got " ~ columns) }}
{%- endif -%}
with cols as (
    select *, lower({{ dbrouter.regexp_replace_all('column_name', '[^A-Za-z0-9]', '') }}) as column_token
    from {{ columns }}
),
pks as (
    select db_id, table_name, column_name, type_family,
           lower({{ dbrouter.regexp_replace_all('table_name', '[^A-Za-z0-9]', '') }}) as table_token
    from cols
    where is_single_primary_key
),
{#- the two names a column referencing a primary key's table takes, one row each, so the rule is
    an equi-join: as a condition on every (column, key) pair it ran two regular expressions per
    pair, and a database of 20,000 columns and 4,000 keys did not finish in minutes -#}
pk_names as (
    select db_id, table_name, column_name, type_family, table_token || 'id' as ref_token from pks
    union
    select db_id, table_name, column_name, type_family,
           {{ dbrouter.regexp_replace_all('table_token', 's$', '') }} || 'id' from pks
),
candidates as (
    select
        c.db_id, c.table_name, c.column_name,
        p.table_name as ref_table_name, p.column_name as ref_column_name,
        'references_table_name' as rule
    from cols as c
    join pk_names as p
      on p.db_id = c.db_id and p.ref_token = c.column_token and p.table_name <> c.table_name
     and (c.type_family = p.type_family or 'other' in (c.type_family, p.type_family))

    union all

    select
        c.db_id, c.table_name, c.column_name,
        p.table_name, p.column_name,
        'matches_primary_key' as rule
    from cols as c
    join pks as p
      on p.db_id = c.db_id and p.table_name <> c.table_name
     and lower(c.column_name) = lower(p.column_name)
     and lower(p.column_name) not in ('id', 'name', 'code', 'key', 'no', 'number')
     and (c.type_family = p.type_family or 'other' in (c.type_family, p.type_family))
)
select
    db_id, table_name, column_name, ref_table_name, ref_column_name,
    min(rule) as rule
from candidates
group by 1, 2, 3, 4, 5
{%- endmacro %}
