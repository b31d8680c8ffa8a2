select document_id, doc_kind, db_id, table_name, column_name, doc_label, document_text, source_id, content_hash
from {{ ref('int_documents_rendered') }}
