select
    db_id || '.' || table_name || '.' || column_name as column_key,
    db_id || '.' || ref_table_name || '.' || ref_column_name as ref_column_key,
    db_id, table_name, column_name, ref_table_name, ref_column_name
from {{ ref('int_foreign_keys_validated') }}
