select id, {{ dbrouter.question_key('q') }} as k
from (values (1, 'How many  singers?'), (2, ' how many singers '), (3, 'Ünïcode—words, 2 of them!')) as t(id, q)
