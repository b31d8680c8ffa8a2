{#- rows_of_databases: the listed databases' rows that satisfy the condition, by a join and (DuckDB)
    by rowid, the same rows; database c has none. rowid_lateral: the databases a column of an outer
    row (a table of questions routed at once), so the subquery is correlated. -#}
select variant, db_id, doc_kind, count(*) as n
from (
    select 'join' as variant, x.*
    from ({{ dbrouter.rows_of_databases(ref('fx_schema_documents'), "select 'a' as db_id union all select 'c'",
                                         "r.doc_kind in ('table', 'column')") }}) as x
    union all
    select 'rowid', x.*
    from ({{ dbrouter.rows_of_databases(ref('fx_schema_documents'), "select 'a' as db_id union all select 'c'",
                                         "r.doc_kind in ('table', 'column')", by_row_id=true) }}) as x
    union all
    select 'rowid_lateral', x.*
    from (select 'a' as db union all select 'c') as outer_row,
        lateral ({{ dbrouter.rows_of_databases(ref('fx_schema_documents'), "select outer_row.db as db_id",
                                               "r.doc_kind in ('table', 'column')", by_row_id=true) }}) as x
) as both_ways
group by variant, db_id, doc_kind
