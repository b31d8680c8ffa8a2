{#-
  A SELECT of every column of `relation`'s rows whose db_id is one of `dbs`' and that satisfy
  `where` (written over alias `r`): the rows of a KB table that belong to a few candidate databases.

  Args:
    relation: a KB table with a db_id column.
    dbs: a SELECT of distinct db_id values (one column named db_id).
    where: a condition over `r`, the relation's alias (default: every row).
    by_row_id: DuckDB: fetch the rows by their rowid (below); only for a stored table, not for the
      Arrow copies the UDF path's held statement reads (which have no rowid).
-#}
{% macro rows_of_databases(relation, dbs, where='true', by_row_id=false) -%}
{%- if not relation or not dbs -%}
  {{ exceptions.raise_compiler_error("rows_of_databases: adapter " ~ adapter.type() ~ ", arguments relation and dbs are required, got " ~ relation ~ ", " ~ dbs) }}
{%- endif -%}
  {{ return(adapter.dispatch('rows_of_databases', 'dbrouter')(relation, dbs, where, by_row_id)) }}
{%- endmacro %}

{#- A join on db_id: the engine prunes by its own means (Snowflake's micro-partitions). -#}
{% macro default__rows_of_databases(relation, dbs, where='true', by_row_id=false) -%}
select r.* from {{ relation }} as r join ({{ dbs }}) as s on s.db_id = r.db_id where {{ where }}
{%- endmacro %}

{#- DuckDB applies a join's db_id filter to a scan only to skip row groups, and every row group
    holds some candidate: the scan read every row's wide columns (a column phrase's vector and
    token lists) and the join dropped nearly all of them (10,000 databases: 517k rows, 68 ms of a
    pure-SQL question). The rowids of the candidates' rows come from a scan of db_id and the
    `where` columns alone, and a join on rowid makes DuckDB fetch just those rows (476 phrases of
    10 databases: 4.4 ms instead of 33.5 ms for the vectors alone). A join, not `rowid in (...)`:
    routing a table of questions at once (`lateral route_query_ranked_sql`) makes the subquery
    correlated, and DuckDB decorrelated an IN into a semi join that paired every row of the
    relation with every question (spider-route, 40 questions: 62 -> 44 ms a question batched; one
    question, 206 and 10,000 databases: the same). The rowids are found with a semi join (`db_id in
    (dbs)`), not a join with dbs: DuckDB estimated that join's rows above the table's own count
    (547,295 for 516,874; a semi join it estimates below its input), built its hash table on the
    whole table and read every row's vector, the rowid filter unused (10,000 databases: 517k
    phrases, 147 ms of a 466 ms pure-SQL question; 206: every phrase and column vector). Batched
    routing is unchanged (spider-route, 30 questions at once: the same time and answers). -#}
{% macro duckdb__rows_of_databases(relation, dbs, where='true', by_row_id=false) -%}
{%- if not by_row_id -%}
{{ dbrouter.default__rows_of_databases(relation, dbs, where) }}
{%- else -%}
select t.* from (select r.rowid as row_id from {{ relation }} as r where {{ where }} and r.db_id in ({{ dbs }})) as picked
join {{ relation }} as t on t.rowid = picked.row_id
{%- endif -%}
{%- endmacro %}
