select {{ dbrouter.array_size(dbrouter.array_literal(["'a'", "'b'"])) }} as n2, {{ dbrouter.array_size(dbrouter.array_literal([])) }} as n0,
    {{ dbrouter.array_size('cast(null as varchar[])') }} as n_null, {{ dbrouter.array_literal(["'a'", "'b'"]) }}[2] as second
