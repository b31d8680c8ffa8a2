{#-
  Implied join edges, found by three naming rules (each edge records its rule):
    references_table_name : column `<other>_id` / `<other>id` (also singular `<other>` minus 's')
                            pointing at <other>'s single-column primary key;
    matches_primary_key   : column named exactly like another table's single-column primary key
                            (generic key names such as `id` are excluded: they would join everything);
    shares_key_name       : only in a database that declares no key at all (no single-column primary
                            key, no foreign key: warehouse exports), where the two rules above find
                            nothing - a key-like column (name ending in id, key or code, not the bare
                            word, not a nested field) shared by several tables points at the same column of the
                            narrowest of them (fewest columns: usually the dimension table), so
                            k tables sharing a name give k - 1 edges, not k^2.
  All require compatible type families (or one side of family 'other').

  Args:
    columns: relation with (db_id, table_name, column_name, type_family, is_single_primary_key,
      is_foreign_key)
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
keyless_databases as (
    select db_id
    from cols
    group by db_id
    having max(case when is_single_primary_key or is_foreign_key then 1 else 0 end) = 0
),
{#- a name ending like a key, in a keyless database: the candidates of rule shares_key_name -#}
shared_keys as (
    select c.db_id, c.table_name, c.column_name, c.type_family, lower(c.column_name) as name_lower
    from cols as c
    join keyless_databases as k on k.db_id = c.db_id
    where (c.column_token like '%id' or c.column_token like '%key' or c.column_token like '%code')
      and c.column_token not in ('id', 'key', 'code')
      {#- a nested field (`bodySite.coding.code`) shared by tables is a shared record type, not a key -#}
      and c.column_name not like '%.%'
),
table_widths as (
    select db_id, table_name, count(*) as n_columns
    from cols
    group by db_id, table_name
),
{#- per shared name, the narrowest table holding it (ties by table name): the hub all others point at -#}
key_hubs as (
    select db_id, table_name, column_name, type_family, name_lower
    from (
        select s.*, row_number() over (
                   partition by s.db_id, s.name_lower
                   order by w.n_columns, s.table_name, s.column_name) as hub_rank,
               count(*) over (partition by s.db_id, s.name_lower) as n_sharing
        from shared_keys as s
        join table_widths as w on w.db_id = s.db_id and w.table_name = s.table_name
    ) as ranked
    where hub_rank = 1 and n_sharing > 1
),
candidates as (
    select
        c.db_id, c.table_name, c.column_name,
        p.table_name as ref_table_name, p.column_name as ref_column_name,
        'references_table_name' as rule
    from cols as c
    join pk_names as p
      on p.db_id = c.db_id and p.ref_token = c.column_token and p.table_name <> c.table_name
     and {{ dbrouter._join_types_compatible('c', 'p') }}

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
     and {{ dbrouter._join_types_compatible('c', 'p') }}

    union all

    select
        s.db_id, s.table_name, s.column_name,
        h.table_name, h.column_name,
        'shares_key_name' as rule
    from shared_keys as s
    join key_hubs as h
      on h.db_id = s.db_id and h.name_lower = s.name_lower and h.table_name <> s.table_name
     and {{ dbrouter._join_types_compatible('s', 'h') }}
)
select
    db_id, table_name, column_name, ref_table_name, ref_column_name,
    min(rule) as rule
from candidates
group by 1, 2, 3, 4, 5
{%- endmacro %}

{#- the one type rule of every naming rule: the same type family, or one side of family 'other' -#}
{% macro _join_types_compatible(left, right) -%}
    ({{ left }}.type_family = {{ right }}.type_family or 'other' in ({{ left }}.type_family, {{ right }}.type_family))
{%- endmacro %}
