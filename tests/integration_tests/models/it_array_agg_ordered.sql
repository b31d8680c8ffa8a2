select g, cast({{ dbrouter.array_agg_ordered('v', 'k desc') }} as varchar) as a
from (values (1, 'x', 1), (1, 'y', 2), (2, 'z', 1)) as t(g, v, k)
group by g
