select id, {{ dbrouter.is_nan('x') }} as nan
from (values (1, 'nan'::double), (2, 0.5::double), (3, 0.0::double)) as t(id, x)
