select cast({{ dbrouter.json_object([('a', '1'), ('b', 'null'), ('c', dbrouter.json_nest("'[1,2]'"))]) }} as varchar) as j
