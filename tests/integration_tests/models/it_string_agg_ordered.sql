select g, {{ dbrouter.string_agg_ordered('v', "'|'", 'k') }} as s
from (values (1, 'x', 1), (1, 'y', 2), (2, null, 1)) as t(g, v, k)
group by g
