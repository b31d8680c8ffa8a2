{#- A fixture, not a test model (no it_ prefix): documents for it_probe_schema_scores, 3-d
    directions padded to the UDFs' 384 dimensions. A table, not a CTE: the UDF path reads the
    relation through a cursor of its own. -#}
select db_id, doc_kind, cast(list_concat([x, y, z], list_resize([]::float[], 381, 0)) as float[384]) as embedding
from (values
    ('a', 'database', 1.0, 0.0, 0.0),
    ('a', 'table', 1.0, 0.0, 0.0), ('a', 'table', 0.0, 1.0, 0.0), ('a', 'table', 1.0, 1.0, 0.0),
    ('a', 'table', 0.0, 0.0, 1.0),
    ('a', 'column', 1.0, 0.0, 0.0), ('a', 'column', 2.0, 0.0, 0.0),
    ('a', 'example', 1.0, 0.0, 0.0),
    ('b', 'table', 0.0, 0.0, 1.0), ('b', 'column', 0.0, 1.0, 0.0)
) as t(db_id, doc_kind, x, y, z)
