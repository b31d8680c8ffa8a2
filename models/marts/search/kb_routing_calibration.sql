-- Calibration of the first ranking from the KB's own data (recomputed on every build).
-- example_gap = mean over examples of (max cosine to the other examples of its database
--   - schema score of its database for it). A database without examples has its example
--   signal imputed as schema score + example_gap, so having no examples is not a penalty.
-- static_example_gap is the same over the static vectors (the pure-SQL path's shortlist).
-- examples_trusted = 1 when at least dbrouter__min_calibration_examples examples had another
--   example of their database to compare with: with fewer the gap is noise (a KB where two
--   databases have three examples each), so the first ranking ignores examples altogether
--   (route_shortlist_step), the ranker zeroes its example signals (route_signals_step), and a
--   database never wins or loses on accidental example similarity.
{%- set spaces = dbrouter.embedding_spaces() %}
with
{%- for p, rel in spaces %}
{{ p }}emb as (
    select * from {{ rel }}
),
{{ p }}ex as (
    select document_id, db_id, embedding from {{ p }}emb where doc_kind = 'example'
),
{{ p }}hits as (
    select
        ex.document_id, d.doc_kind,
        {{ dbrouter.cosine_similarity('d.embedding', 'ex.embedding') }} as sim
    from {{ p }}ex as ex
    join {{ p }}emb as d on d.db_id = ex.db_id and d.doc_kind in ('database', 'table', 'column')
),
{{ p }}ranked as (
    select *, row_number() over (partition by document_id, doc_kind order by sim desc) as rn
    from {{ p }}hits
),
{{ p }}schema_scores as (
    select
        document_id,
        {{ dbrouter.schema_score(
            "max(case when doc_kind = 'database' then sim end)",
            "avg(case when doc_kind = 'table' and rn <= " ~ var('dbrouter__top_tables') ~ " then sim end)",
            "avg(case when doc_kind = 'column' and rn <= " ~ var('dbrouter__top_columns') ~ " then sim end)") }} as s_schema
    from {{ p }}ranked
    group by 1
),
{{ p }}example_loo as (
    select a.document_id, max({{ dbrouter.cosine_similarity('a.embedding', 'b.embedding') }}) as s_example
    from {{ p }}ex as a
    join {{ p }}ex as b on b.db_id = a.db_id and b.document_id <> a.document_id
    group by 1
),
{{ p }}gap as (
    select count(*) as n_examples_used, coalesce(avg(l.s_example - s.s_schema), 0) as example_gap
    from {{ p }}example_loo as l
    join {{ p }}schema_scores as s on s.document_id = l.document_id
){{ "," if not loop.last }}
{%- endfor %}
select
    gap.n_examples_used,
    gap.example_gap,
    case when gap.n_examples_used >= {{ dbrouter.get_var('dbrouter__min_calibration_examples') | int }} then 1 else 0 end
        as examples_trusted,
{%- if spaces | length > 1 %}
    static_gap.example_gap as static_example_gap,
{%- endif %}
    current_timestamp as calibrated_at
from gap{% if spaces | length > 1 %} cross join static_gap{% endif %}
