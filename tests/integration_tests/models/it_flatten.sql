select t.id, f.index, f.value
from (values (1, ['a', 'b']), (2, cast([] as varchar[]))) as t(id, arr),
    {{ dbrouter.flatten('t.arr', 'f') }}
