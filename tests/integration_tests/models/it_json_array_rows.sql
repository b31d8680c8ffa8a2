select r.a, r.b
from {{ dbrouter.json_array_rows("'[{\"a\": \"x\", \"b\": \"1\"}, {\"a\": \"y\"}]'", ['a', 'b'], 'r') }}
