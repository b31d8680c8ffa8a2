-- How much a token proves about the database it is found in: idf = ln(N / df), N the number of
-- databases in the KB, df the number whose tokens of that source hold it. A word in every
-- database's names ("id", "name") weighs 0; a word of one database out of 200 weighs 5.3.
with n as (select count(*) as n_databases from {{ ref('kb_databases') }})
select t.token, t.source, count(*) as n_databases_with,
    ln(greatest(max(n.n_databases), 1) * 1.0 / count(*)) as idf
from {{ ref('kb_route_tokens') }} as t
cross join n
group by t.token, t.source
