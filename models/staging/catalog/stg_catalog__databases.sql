select
    cast(db_id as varchar) as db_id,
    cast(source_type as varchar) as source_type,
    cast(source_path as varchar) as source_path,
    nullif(trim(description), '') as database_description,
    cast(status as varchar) as ingest_status,
    cast(ingested_at as timestamp) as ingested_at
from {{ source('catalog', 'databases') }}
