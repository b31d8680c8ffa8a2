-- Every join edge (declared or implied) must connect two existing columns of the same database.
select e.*
from {{ ref('kb_join_edges') }} as e
left join {{ ref('kb_columns') }} as f on f.column_key = e.from_column_key and f.db_id = e.db_id
left join {{ ref('kb_columns') }} as t on t.column_key = e.to_column_key and t.db_id = e.db_id
where f.column_key is null or t.column_key is null
