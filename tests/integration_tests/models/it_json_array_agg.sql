select g, {{ dbrouter.json_array_agg('v', 'v desc') }} as j
from (values (1, 'x'), (1, 'y'), (2, 'z')) as t(g, v)
group by g
