select id, {{ dbrouter.array_size(dbrouter.json_get_list('t', 'xs')) }} as n, {{ dbrouter.json_get_list('t', 'xs') }}[1] as first
from (values (1, '{"xs": ["a", "b"]}'), (2, '{"xs": []}')) as t(id, t)
