select
    t.table_key, t.db_id, t.table_name, t.table_label, t.table_description, t.row_count, t.table_kind,
    t.n_columns, t.shard_count, t.shard_pattern, t.first_shard, t.last_shard, t.table_ddl,
    d.document_text as table_document
from {{ ref('int_tables_described') }} as t
left join {{ ref('int_documents_rendered') }} as d
  on d.doc_kind = 'table' and d.db_id = t.db_id and d.table_name = t.table_name
