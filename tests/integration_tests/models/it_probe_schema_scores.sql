{#- probe_schema_scores on DuckDB (the UDF dbrouter_schema_scores) and its portable SQL body
    must agree, and equal the hand-computed means: database a has 4 tables (top 3 averaged), 2
    tied columns and an example (not read); b has no database document. -#}
with probes as (
    select probe_id, cast(list_concat([x, y, z], list_resize([]::float[], 381, 0)) as float[384]) as embedding
    from (values ('p1', 1.0, 0.0, 0.0), ('p2', 0.0, 0.0, 1.0)) as t(probe_id, x, y, z)
),
by_udf as ({{ dbrouter.probe_schema_scores('probes', 'probe_id', 'embedding', ref('fx_schema_documents')) }}),
by_sql as ({{ dbrouter.default__probe_schema_scores('probes', 'probe_id', 'embedding', ref('fx_schema_documents')) }})
select u.probe_id, u.db_id, round(u.s_schema, 4) as s_udf, round(s.s_schema, 4) as s_sql
from by_udf as u
join by_sql as s on s.probe_id = u.probe_id and s.db_id = u.db_id
