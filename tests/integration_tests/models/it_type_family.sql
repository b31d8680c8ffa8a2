select nullif(t, '') as t, {{ dbrouter.type_family('t') }} as family
from (values ('integer'), ('decimal(10,2)'), ('varchar(20)'), ('timestamp with time zone'), ('boolean'), ('blob'), ('')) as v(t)
