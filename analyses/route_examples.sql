-- Routing from dbt: `dbt compile --select route_examples` renders this; run it with
-- `dbt show --select route_examples` (the UDFs are registered by the profile's plugin).
select q.question, r.rank, r.db_id, r.score, r.evidence
from (values
    ('How many singers do we have?'),
    ('Which courses does the history department offer?')
) as q(question),
lateral (select * from route_query_ranked(q.question, 3)) as r
order by q.question, r.rank
