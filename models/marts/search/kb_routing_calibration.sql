-- Calibration of the first ranking from the KB's own data (recomputed on every build).
-- example_gap = mean over examples of (max cosine to the other examples of its database
--   - schema score of its database for it). A database without examples has its example
--   signal imputed as schema score + example_gap, so having no examples is not a penalty.
-- examples_trusted: do this KB's examples route its own example questions better than its schema
--   does? Up to dbrouter__calibration_probes example questions (a fixed pseudo-random sample) are
--   routed leave-one-out over every database (only examples whose database has another one): by the
--   schema score alone, and by the fused score
--   with the other examples (exactly as route_shortlist_step fuses them). The examples are trusted
--   when they put at least one more probe's own database first than the schema does; otherwise
--   (a handful of examples, or examples that only add accidental similarity between look-alike
--   databases) the first ranking ignores examples and the ranker zeroes its example signals
--   (route_signals_step), so such a KB routes exactly as without them, and --explain says why.
--   Var dbrouter__trust_examples (null: decided so) set to true or false decides it instead.
-- abstain_floor: the first-ranking score below which route_query abstains on this KB (its own
--   calibration, per path): the dbrouter__abstain_in_repository quantile (0.02) of the probes'
--   scores for their own database, so about that share of in-repository questions is refused.
--   probes_out_refused is the KB's own estimate of the out-of-repository share refused: the probes
--   whose best *other* database scores below the floor (as if their database were not in the KB).
--   With fewer than 1 / that share probes (50: a KB with few or no examples) the floor is NULL
--   and offtopic_floor applies instead.
-- offtopic_floor: the dbrouter__abstain_offtopic_quantile (0.5) quantile of the off-topic probes'
--   (seed offtopic_probes) best first-ranking scores on this KB, per path: a question whose best
--   database scores below what a typical question about nothing in this KB scores is refused. It
--   needs no examples, so every KB has it from its first build (NULL only with an empty seed, when
--   the fitted ranker threshold dbrouter__abstain_below applies).
-- Every column comes once per embedding space: unprefixed for the embedder's vectors, static_ for
--   the pure-SQL path's static vectors (DuckDB).
{%- set spaces = dbrouter.embedding_spaces() %}
{%- set w = dbrouter.get_var('dbrouter__weight_example') | float %}
{%- set probes = dbrouter.get_var('dbrouter__calibration_probes') | int %}
{%- set in_refused = dbrouter.get_var('dbrouter__abstain_in_repository') | float %}
{#- a quantile q is estimable from at least 1 / q probes (50 at 0.02): with fewer, no floor -#}
{%- set min_probes = (1.0 / in_refused) | round(0, 'ceil') | int %}
{%- set trust = dbrouter.get_var('dbrouter__trust_examples') %}
{%- set off_q = dbrouter.get_var('dbrouter__abstain_offtopic_quantile') | float %}
{#- An example's schema score for its own database over rows (doc_kind, sim, rn: rank within its
    kind), read by the example gap (ranked_schema_score: the probes, scored against every
    database, go through probe_schema_scores, whose SQL body reads the same macro); the
    shortlist's fused score over s (s_schema), x (s_example) and g (example_gap) and the trust
    decision over l (the leave-one-out counts), written once and read by every probe set below. -#}
{%- set schema_sql = dbrouter.ranked_schema_score() %}
{%- set fused_sql = "(s.s_schema + " ~ w ~ " * coalesce(x.s_example, s.s_schema + g.example_gap)) / (1.0 + " ~ w ~ ")" %}
{%- set trusted_sql = 'l.right_by_examples > l.right_by_schema' if trust is none else ('true' if trust else 'false') %}
with
{%- for p, rel in spaces %}
{# the documents' relation is read where it is needed, not through a CTE over all of it: DuckDB
    materialises a CTE read more than once, and that copied every document vector (1 GB at 10,000
    databases) to keep the examples' #}
{{ p }}ex as (
    select document_id, db_id, embedding from {{ rel }} where doc_kind = 'example'
),
{{ p }}hits as (
    select
        ex.document_id, d.doc_kind,
        {{ dbrouter.cosine_similarity('d.embedding', 'ex.embedding') }} as sim
    from {{ p }}ex as ex
    join {{ rel }} as d on d.db_id = ex.db_id and d.doc_kind in ('database', 'table', 'column')
),
{{ p }}ranked as (
    select *, row_number() over (partition by document_id, doc_kind order by sim desc) as rn
    from {{ p }}hits
),
{{ p }}schema_scores as (
    select
        document_id,
        {{ schema_sql }} as s_schema
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
    {#- only examples whose database keeps another example when they are left out: a probe must meet
        its database as a question asked later meets it (with its examples). The only example of a
        database would test routing a question whose database lost its examples while the others keep
        theirs, the case fusion serves worst: with one example per database every probe was such a
        one, and the test trusted examples that cost the pure-SQL path 0.05 R@1 (eval few). -#}
    select document_id, db_id, embedding
    from (select *, row_number() over (order by md5(document_id)) as pick from {{ p }}ex
          where document_id in (select document_id from {{ p }}example_loo)) as sampled
    where pick <= {{ probes }}
),
{{ p }}probe_schema as {{ dbrouter.cte_materialized() }} (
    select probe_id as document_id, db_id, s_schema
    from ({{ dbrouter.probe_schema_scores(p ~ 'probe', 'document_id', 'embedding', rel) }}) as scored
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
        {{ fused_sql }} as s_fused
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
),
{{ p }}probe_floor as (
    {#- Each probe's first-ranking score for its own database (in repository) and the best score of
        another database (what it would get were its database not in the KB: out of repository),
        scored as the shortlist scores them given the trust decision above. -#}
    select s.document_id,
        max(case when s.db_id = pr.db_id then s.score end) as own_score,
        max(case when s.db_id <> pr.db_id then s.score end) as other_score
    from (select document_id, db_id,
              case when {{ trusted_sql }} then s_fused else s_schema end as score
          from {{ p }}probe_scored cross join {{ p }}loo as l) as s
    join {{ p }}probe as pr on pr.document_id = s.document_id
    group by s.document_id
),
{{ p }}floor as (
    select case when count(*) >= {{ min_probes }} then {{ dbrouter.quantile_cont('own_score', in_refused) }} end
        as abstain_floor
    from {{ p }}probe_floor
),
{{ p }}floor_check as (
    select avg(case when f.own_score < x.abstain_floor then 1.0 else 0.0 end) as probes_in_refused,
        avg(case when f.other_score < x.abstain_floor then 1.0 else 0.0 end) as probes_out_refused
    from {{ p }}probe_floor as f cross join {{ p }}floor as x
),
{#- The off-topic probes (seed offtopic_probes): each one's best first-ranking score over every
    database of this KB on this path, scored as the shortlist scores (the trust decision above). -#}
{{ p }}off as (
    select probe_id, {{ p }}embedding as embedding
    from {{ ref('kb_offtopic_probe_embeddings') }}
    where {{ p }}embedding is not null
),
{{ p }}off_schema as {{ dbrouter.cte_materialized() }} (
    {{ dbrouter.probe_schema_scores(p ~ 'off', 'probe_id', 'embedding', rel) }}
),
{{ p }}off_examples as (
    select o.probe_id, e.db_id, max({{ dbrouter.cosine_similarity('e.embedding', 'o.embedding') }}) as s_example
    from {{ p }}off as o
    join {{ p }}ex as e on true
    group by 1, 2
),
{{ p }}off_best as (
    select s.probe_id,
        max(case when {{ trusted_sql }} then {{ fused_sql }} else s.s_schema end) as best
    from {{ p }}off_schema as s
    left join {{ p }}off_examples as x on x.probe_id = s.probe_id and x.db_id = s.db_id
    cross join {{ p }}gap as g
    cross join {{ p }}loo as l
    group by s.probe_id
),
{{ p }}off_floor as (
    select count(*) as n_offtopic_probes,
        case when count(*) > 0 then {{ dbrouter.quantile_cont('best', off_q) }} end as offtopic_floor
    from {{ p }}off_best
){{ "," if not loop.last }}
{%- endfor %}
select
{%- for p, rel in spaces %}
    {{ p }}gap.n_examples_used as {{ p }}n_examples_used,
    {{ p }}gap.example_gap as {{ p }}example_gap,
    {{ p }}loo.n_probes as {{ p }}n_probes,
    {{ p }}loo.right_by_schema as {{ p }}probes_right_by_schema,
    {{ p }}loo.right_by_examples as {{ p }}probes_right_by_examples,
{%- if trust is none %}
    case when {{ p }}loo.right_by_examples > {{ p }}loo.right_by_schema then 1 else 0 end as {{ p }}examples_trusted,
{%- else %}
    {{ 1 if trust else 0 }} as {{ p }}examples_trusted,
{%- endif %}
    {{ p }}floor.abstain_floor as {{ p }}abstain_floor,
    {{ p }}floor_check.probes_in_refused as {{ p }}probes_in_refused,
    {{ p }}floor_check.probes_out_refused as {{ p }}probes_out_refused,
    {{ p }}off_floor.n_offtopic_probes as {{ p }}n_offtopic_probes,
    {{ p }}off_floor.offtopic_floor as {{ p }}offtopic_floor,
{%- endfor %}
    current_timestamp as calibrated_at
from {% for p, rel in spaces %}{{ p }}gap cross join {{ p }}loo cross join {{ p }}floor cross join {{ p }}floor_check cross join {{ p }}off_floor{{ ' cross join ' if not loop.last }}{% endfor %}
