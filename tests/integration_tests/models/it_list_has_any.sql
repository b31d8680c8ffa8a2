select id, {{ dbrouter.list_has_any('a', 'b') }} as shared
from (values (1, ['x', 'y'], ['y']), (2, ['x'], ['z']), (3, ['x', 'y'], ['x', 'z'])) as t(id, a, b)
