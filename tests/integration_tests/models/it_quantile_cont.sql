select {{ dbrouter.quantile_cont('x', 0.5) }} as q50, {{ dbrouter.quantile_cont('x', 0.1) }} as q10
from (values (1.0::double), (2.0), (3.0), (4.0), (5.0), (null)) as t(x)
