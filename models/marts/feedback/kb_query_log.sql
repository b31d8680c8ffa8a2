{# A view, not a copy: the rows are dbrouter_user.query_log's, which only ever grows (each build adds
   the journal's new entries), so a table here would just double its size. #}
{{ config(materialized='view') }}
select entry_id, logged_at, source, tool, question, asked_by, ranking_json, chosen_db_id, abstained,
       sql_text, status, error_message, seconds
from {{ ref('stg_user__query_log') }}
