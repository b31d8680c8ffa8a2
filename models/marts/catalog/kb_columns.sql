select
    c.column_key, c.table_key, c.db_id, c.table_name, c.column_name, c.column_label,
    c.ordinal_position, c.data_type, c.type_family, c.is_primary_key, c.is_foreign_key,
    c.references_text, c.column_description, c.value_description, c.sample_values,
    d.document_text as column_document
from {{ ref('int_columns_keyed') }} as c
left join {{ ref('int_documents_rendered') }} as d
  on d.doc_kind = 'column' and d.document_id = 'column:' || c.column_key
