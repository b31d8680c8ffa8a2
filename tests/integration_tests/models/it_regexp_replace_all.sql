select {{ dbrouter.regexp_replace_all("'a1b22c'", '[0-9]+', '#') }} as digits, {{ dbrouter.regexp_replace_all("'it''s  a  test'", "\s+|'", '_') }} as spaces
