select
    cast(entry_id as varchar) as entry_id,
    cast(logged_at as timestamp) as logged_at,
    cast(source as varchar) as source,
    cast(tool as varchar) as tool,
    cast(question as varchar) as question,
    cast(asked_by as varchar) as asked_by,
    cast(ranking as varchar) as ranking_json,
    cast(chosen as varchar) as chosen_db_id,
    cast(abstained as boolean) as abstained,
    cast(sql_text as varchar) as sql_text,
    cast(status as varchar) as status,
    cast(error as varchar) as error_message,
    cast(seconds as double) as seconds
from {{ source('user', 'query_log') }}
