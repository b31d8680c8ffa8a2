-- The off-topic probe questions (seed offtopic_probes) embedded in each routing path's space:
-- `embedding` with the question encoder (embed, as route_shortlist_step embeds a question), and on
-- DuckDB `static_embedding`, the pure-SQL path's static vector of the question's content words
-- (what that path computes from kb_static_pieces; NULL when no content word is left). The column
-- prefixes are embedding_spaces()'. kb_routing_calibration scores them against the KB's
-- documents: how a question about nothing in this KB scores on it, per path.
select p.probe_id, p.kind, p.question,
    {{ dbrouter.embed_sql('p.question') }} as embedding
{%- if target.type == 'duckdb' %},
    embed_phrase(nullif(array_to_string({{ dbrouter.content_word_list('p.question', 'sw.stop') }}, ' '), '')) as static_embedding
from {{ ref('stg_seeds__offtopic_probes') }} as p, (select list(word) as stop from {{ ref('kb_stop_words') }}) as sw
{%- else %}
from {{ ref('stg_seeds__offtopic_probes') }} as p
{%- endif %}
