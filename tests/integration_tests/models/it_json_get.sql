select id, {{ dbrouter.json_get('t', 'name') }} as v
from (values (1, '{"name": "a b"}'), (2, '{"other": 1}'), (3, '{"name": 7}')) as t(id, t)
