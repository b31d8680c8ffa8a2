select id, {{ dbrouter.json_at('j', [0, 'evidence', 'abstain']) }} as v
from (values (1, '[{"evidence": {"abstain": true}}]'::json), (2, '[{"evidence": {"abstain": null}}]'::json),
            (3, '[]'::json), (4, '[{"evidence": {"test": "vocabulary"}}]'::json)) as t(id, j)
