{#- the key of a column of questions, then of each question alone (one_row: on DuckDB an ASCII fast
    path), ids + 10: the same keys -#}
with t(id, q) as (
    values (1, 'How many  singers?'), (2, ' how many singers '), (3, 'Ünïcode—words, 2 of them!'),
           (4, 'Top-10 SINGERS (2024), please'), (5, 'ĶELVIN ≠ kelvin: 3.5°')
)
select id, {{ dbrouter.question_key('q') }} as k from t
union all
select id + 10, {{ dbrouter.question_key('q', one_row=true) }} from t
