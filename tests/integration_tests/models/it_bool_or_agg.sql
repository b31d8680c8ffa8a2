select g, {{ dbrouter.bool_or_agg('b') }} as any_true
from (values (1, true), (1, false), (2, false), (2, null)) as t(g, b)
group by g
