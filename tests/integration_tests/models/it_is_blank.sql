select id, {{ dbrouter.is_blank('v') }} as blank
from (values (1, 'a'), (2, ''), (3, '  ' || chr(9)), (4, ' x '), (5, chr(160)), (6, null)) as t(id, v)
