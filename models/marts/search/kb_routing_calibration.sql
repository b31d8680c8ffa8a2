-- Calibration of the first ranking from the KB's own data (recomputed on every build).
-- example_gap = mean over examples of (max cosine to the other examples of its database
--   - schema score of its database for it). A database without examples has its example
--   signal imputed as schema score + example_gap, so having no examples is not a penalty.
-- examples_trusted: do this KB's examples route its own example questions better than its schema
--   does? Up to dbrouter__calibration_probes example questions (a fixed pseudo-random sample) are
--   routed leave-one-out over every database: by the schema score alone, and by the fused score
--   with the other examples (exactly as route_shortlist_step fuses them). The examples are trusted
--   when they put at least one more probe's own database first than the schema does; otherwise
--   (a handful of examples, or examples that only add accidental similarity between look-alike
--   databases) the first ranking ignores examples and the ranker zeroes its example signals
--   (route_signals_step), so such a KB routes exactly as without them, and --explain says why.
-- Every column comes once per embedding space: unprefixed for the embedder's vectors, static_ for
--   the pure-SQL path's static vectors (DuckDB).
{%- set spaces = dbrouter.embedding_spaces() %}
{%- set w = dbrouter.get_var('dbrouter__weight_example') | float %}
{%- set probes = dbrouter.get_var('dbrouter__calibration_probes') | int %}
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
),
{{ p }}probe as (
    select document_id, db_id, embedding
    from (select *, row_number() over (order by md5(document_id)) as pick from {{ p }}ex) as sampled
    where pick <= {{ probes }}
),
{{ p }}probe_hits as (
    select pr.document_id, d.db_id, d.doc_kind,
        {{ dbrouter.cosine_similarity('d.embedding', 'pr.embedding') }} as sim
    from {{ p }}probe as pr
    join {{ p }}emb as d on d.doc_kind in ('database', 'table', 'column')
),
{{ p }}probe_ranked as (
    select *, row_number() over (partition by document_id, db_id, doc_kind order by sim desc) as rn
    from {{ p }}probe_hits
),
{{ p }}probe_schema as (
    select
        document_id, db_id,
        {{ dbrouter.schema_score(
            "max(case when doc_kind = 'database' then sim end)",
            "avg(case when doc_kind = 'table' and rn <= " ~ var('dbrouter__top_tables') ~ " then sim end)",
            "avg(case when doc_kind = 'column' and rn <= " ~ var('dbrouter__top_columns') ~ " then sim end)") }} as s_schema
    from {{ p }}probe_ranked
    group by 1, 2
),
{{ p }}probe_examples as (
    {#- the probe itself left out: the best other example of every database -#}
    select pr.document_id, e.db_id, max({{ dbrouter.cosine_similarity('e.embedding', 'pr.embedding') }}) as s_example
    from {{ p }}probe as pr
    join {{ p }}ex as e on e.document_id <> pr.document_id
    group by 1, 2
),
{{ p }}probe_scored as (
    select s.document_id, s.db_id, s.s_schema,
        (s.s_schema + {{ w }} * coalesce(x.s_example, s.s_schema + g.example_gap)) / (1.0 + {{ w }}) as s_fused
    from {{ p }}probe_schema as s
    left join {{ p }}probe_examples as x on x.document_id = s.document_id and x.db_id = s.db_id
    cross join {{ p }}gap as g
),
{{ p }}probe_top as (
    select o.document_id,
        max(case when o.by_schema = 1 and o.db_id = pr.db_id then 1 else 0 end) as right_by_schema,
        max(case when o.by_examples = 1 and o.db_id = pr.db_id then 1 else 0 end) as right_by_examples
    from (select *,
              row_number() over (partition by document_id order by s_schema desc, db_id) as by_schema,
              row_number() over (partition by document_id order by s_fused desc, db_id) as by_examples
          from {{ p }}probe_scored) as o
    join {{ p }}probe as pr on pr.document_id = o.document_id
    group by o.document_id
),
{{ p }}loo as (
    select count(*) as n_probes, coalesce(sum(right_by_schema), 0) as right_by_schema,
        coalesce(sum(right_by_examples), 0) as right_by_examples
    from {{ p }}probe_top
){{ "," if not loop.last }}
{%- endfor %}
select
{%- for p, rel in spaces %}
    {{ p }}gap.n_examples_used as {{ p }}n_examples_used,
    {{ p }}gap.example_gap as {{ p }}example_gap,
    {{ p }}loo.n_probes as {{ p }}n_probes,
    {{ p }}loo.right_by_schema as {{ p }}probes_right_by_schema,
    {{ p }}loo.right_by_examples as {{ p }}probes_right_by_examples,
    case when {{ p }}loo.right_by_examples > {{ p }}loo.right_by_schema then 1 else 0 end as {{ p }}examples_trusted,
{%- endfor %}
    current_timestamp as calibrated_at
from {% for p, rel in spaces %}{{ p }}gap cross join {{ p }}loo{{ ' cross join ' if not loop.last }}{% endfor %}
