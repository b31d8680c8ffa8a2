select {{ dbrouter.struct_field("{'a': '7', 'b': 'x'}", 'a', 'integer') }} + 1 as a_plus_1,
    {{ dbrouter.struct_field("{'a': '7', 'b': 'x'}", 'b', 'varchar') }} as b
