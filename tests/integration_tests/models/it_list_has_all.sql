select id, {{ dbrouter.list_has_all('a', 'b') }} as all_in
from (values (1, ['x', 'y'], ['y']), (2, ['x'], ['z']), (3, ['x', 'y'], ['x', 'z']), (4, ['x'], [])) as t(id, a, b)
