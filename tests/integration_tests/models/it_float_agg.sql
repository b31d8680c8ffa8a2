{#- 1e16 + -1e16 + 1 is 1 in that order; in the rows' own order (1, -1e16, 1e16) a float sum loses the 1. -#}
select g,
    {{ dbrouter.float_agg('sum', 'v') }} as s,
    {{ dbrouter.float_agg('avg', 'v') }} * 3 as a3
from (values (1, 1.0::double, 3), (1, -1e16::double, 2), (1, 1e16::double, 1), (2, 0.5::double, 1)) as t(g, v, k)
group by g
