-- The join graph: declared foreign keys plus implied edges, each usable in both directions.
select
    db_id || '.' || from_table || '.' || from_column || '->' || to_table || '.' || to_column as edge_key,
    db_id,
    from_table,
    from_column,
    to_table,
    to_column,
    db_id || '.' || from_table || '.' || from_column as from_column_key,
    db_id || '.' || to_table || '.' || to_column as to_column_key,
    db_id || '.' || from_table as from_table_key,
    db_id || '.' || to_table as to_table_key,
    rule,
    is_declared
from {{ ref('int_join_edges_unioned') }}
