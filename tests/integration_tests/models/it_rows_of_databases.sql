{#- rows_of_databases: the listed databases' rows that satisfy the condition, by a join and (DuckDB)
    by rowid, the same rows; database c has none. -#}
select variant, db_id, doc_kind, count(*) as n
from (
    select 'join' as variant, x.*
    from ({{ dbrouter.rows_of_databases(ref('fx_schema_documents'), "select 'a' as db_id union all select 'c'",
                                         "r.doc_kind in ('table', 'column')") }}) as x
    union all
    select 'rowid', x.*
    from ({{ dbrouter.rows_of_databases(ref('fx_schema_documents'), "select 'a' as db_id union all select 'c'",
                                         "r.doc_kind in ('table', 'column')", by_row_id=true) }}) as x
) as both_ways
group by variant, db_id, doc_kind
