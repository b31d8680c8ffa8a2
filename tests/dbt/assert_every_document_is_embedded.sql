-- Every non-empty document has a vector after a build.
select d.document_id
from {{ ref('kb_documents') }} as d
left join {{ ref('kb_document_embeddings') }} as e on e.document_id = d.document_id
where e.document_id is null and nullif(trim(d.document_text), '') is not null
