{#-
  The example cascade's stage selection, shared by every adapter's retrieve_examples function.

  Consumes CTEs: ex (example_id, question, normalized_question), vec (q_exact, q_norm),
  sims (example_id, s_norm, s_norm_any, s_any), th (normalized_threshold, main_clause_threshold,
  expanded_threshold).
  Produces CTEs (comma-separated, no leading WITH):
    candidates  (stage, stage_name, example_id, score, similarity, threshold)   every stage's hits
    first_stage the candidates of the first stage that found anything
    best        (example_id, stage, stage_name, score, similarity, threshold)   one row per example
  `similarity` is what a stage compares with its threshold; `score` orders the hits: the same, except
  in stage 4, which re-ranks by 0.5 x cosine + 0.5 x word Jaccard of the normalised questions
  (macro word_jaccard, the one adapter-specific expression), so its score can be below the threshold.
-#}
{% macro example_cascade_step() -%}
candidates as (
    select 1 as stage, 'exact' as stage_name, ex.example_id, 1.0 as score, 1.0 as similarity, 1.0 as threshold
    from ex, vec where lower(trim(ex.question)) = vec.q_exact
    union all
    select 2, 'normalized', s.example_id, s.s_norm, s.s_norm, th.normalized_threshold
    from sims as s, th where s.s_norm >= th.normalized_threshold
    union all
    select 3, 'main_clause', s.example_id, s.s_norm_any, s.s_norm_any, th.main_clause_threshold
    from sims as s, th where s.s_norm_any >= th.main_clause_threshold
    union all
    select 4, 'expanded', s.example_id,
        0.5 * s.s_any + 0.5 * {{ dbrouter.word_jaccard('vec.q_norm', 'ex.normalized_question') }},
        s.s_any, th.expanded_threshold
    from sims as s
    join ex on ex.example_id = s.example_id
    cross join vec
    cross join th
    where s.s_any >= th.expanded_threshold
),
first_stage as (
    select * from candidates where stage = (select min(stage) from candidates)
),
best as (
    select example_id, max(stage) as stage, any_value(stage_name) as stage_name, max(score) as score,
        max(similarity) as similarity, max(threshold) as threshold
    from first_stage group by example_id
)
{%- endmacro %}
