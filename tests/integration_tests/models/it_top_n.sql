select g, {{ dbrouter.top_n_avg('v', 2, 'true') }} as avg2, {{ dbrouter.top_value('lbl', 'v', 'lbl') }} as best
from (select *, {{ dbrouter.top_n_rank('g', 'v desc, lbl desc') }} as rn
      from (values (1, 1.0::double, 'a'), (1, 3.0, 'b'), (1, 3.0, 'c'), (2, 5.0, 'd')) as t(g, v, lbl)) as ranked
group by g
