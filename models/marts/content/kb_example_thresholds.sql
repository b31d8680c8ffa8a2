-- Thresholds of the example cascade, calibrated from the KB's own examples on every build
-- (printed in the build log). Distributions, per database:
--   inter_normalized : each example's normalised question vs the nearest *other* example's one;
--   intra            : every pair of descriptors (question, normalised, main clause, entities,
--                      paraphrases) of one example.
-- normalized_threshold  = P95(inter_normalized)   (stage 2: only 5% of different examples
--                                                   come this close)
-- main_clause_threshold = P90(inter_normalized)   (stage 3: lower, and compared against more
--                                                   fields: question, normalised, main clause)
-- expanded_threshold    = min(P01(intra), stage 3) (stage 4: keeps 99% of an example's own
--                                                   descriptor pairs)
-- With no examples the thresholds are 1.0 and the cascade never fires. A quantile q is estimated
-- from at least 1 / q values (P95: 20 examples, P90: 10, P01: 100 descriptor pairs); with fewer
-- its stage stays off (1.0) instead of following a handful of examples: one junk example among
-- six had set the expanded threshold to -0.044, and every example then matched every question.
-- The static_* thresholds are the same over the static vectors (the pure-SQL path's cascade).
{{ config(post_hook="{{ dbrouter.log_example_thresholds() }}") }}
{%- set spaces = dbrouter.embedding_spaces() %}
with
{%- for p, rel in spaces %}
{{ p }}emb as (
    select source_id as example_id, db_id, doc_kind, embedding
    from {{ rel }}
    where doc_kind like 'example%'
),
{{ p }}normalized as (
    select * from {{ p }}emb where doc_kind = 'example_normalized'
),
{{ p }}inter_normalized as (
    select a.example_id, max({{ dbrouter.cosine_similarity('a.embedding', 'b.embedding') }}) as sim
    from {{ p }}normalized as a
    join {{ p }}normalized as b on b.db_id = a.db_id and b.example_id <> a.example_id
    group by 1
),
{{ p }}intra as (
    select {{ dbrouter.cosine_similarity('a.embedding', 'b.embedding') }} as sim
    from {{ p }}emb as a
    join {{ p }}emb as b on b.example_id = a.example_id and a.doc_kind < b.doc_kind
),
{{ p }}stats as (
    select
        (select case when count(*) >= 20 then percentile_cont(0.95) within group (order by sim) end
         from {{ p }}inter_normalized) as p95_inter_normalized,
        (select case when count(*) >= 10 then percentile_cont(0.90) within group (order by sim) end
         from {{ p }}inter_normalized) as p90_inter_normalized,
        (select case when count(*) >= 100 then percentile_cont(0.01) within group (order by sim) end
         from {{ p }}intra) as p01_intra,
        (select count(distinct example_id) from {{ p }}emb) as n_examples
){{ "," if not loop.last }}
{%- endfor %}
select
    stats.n_examples,
{%- for p, _ in spaces %}
    cast(coalesce({{ p }}stats.p95_inter_normalized, 1.0) as double) as {{ p }}normalized_threshold,
    cast(coalesce({{ p }}stats.p90_inter_normalized, 1.0) as double) as {{ p }}main_clause_threshold,
    cast(least(coalesce({{ p }}stats.p01_intra, 1.0), coalesce({{ p }}stats.p90_inter_normalized, 1.0)) as double) as {{ p }}expanded_threshold,
{%- endfor %}
    current_timestamp as calibrated_at
from stats{% if spaces | length > 1 %} cross join static_stats{% endif %}
