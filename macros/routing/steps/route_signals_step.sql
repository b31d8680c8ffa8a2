{#-
  Routing step 4, the re-rank's signals: one row per shortlisted candidate with every number the
  learned ranker weighs (ranker_score), each in [0, 1] or a cosine:

    database, table, column  the shortlist's cosines of the question with the database document,
                             its top tables and its top columns
    example                  how far the database's best example question lies above
                             dbrouter__example_floor (0 when below it or when it has no examples:
                             an example only ever adds evidence, so a KB where only some databases
                             have examples ranks the others as if it had none)
    example_votes            share of the repository's dbrouter__example_votes most similar examples
                             (those above the floor) that belong to the database
    semantic                 mean best phrase -> column cosine of the mapped phrases
    mapped                   share of the question's phrases mapped to a column (the method's
                             coverage, exp(-n x), is a monotone function of it)
    connected                1 when one connected part of the join graph holds a mapping of every
                             mapped phrase
    phrase_wins              share of the phrases this database maps better than (or as well as)
                             every other candidate
    lex_table, lex_name      share of the question's word weight found in the database's table
                             names / table and column names; a word weighs its idf over the KB's
                             databases (kb_route_token_idf), a word no database has weighs ln(N)
    lex_value                the same for sample values, counting only words not found in names
    lex_example              the same for the content words of the database's stored example
                             questions (0 without examples)
    shortlist                the first ranking's fused score (schema similarities and the best
                             example, imputed from kb_routing_calibration for a database without)
    has_examples             1 when the database has stored example questions: its weight offsets
                             the example signals, so a database without examples is not outranked
                             merely because others have some

  The four example signals (example, example_votes, lex_example, has_examples) are 0 while
  kb_routing_calibration does not trust the KB's examples (examples_trusted = 0: routed leave-one-out,
  they put no more of their own questions first than the schema does), as the shortlist then ignores them: a KB
  with a handful of examples ranks exactly as the same KB without any (issue 13: 6 examples for 2
  of 10 demo databases had cost those two databases their own questions through has_examples).

  Args:
    path: 'udf' or 'sql' (route_paths): where kb_route_tokens' rows come from (term_postings).

  Consumes: CTEs shortlist, candidates (route_shortlist_step), cand_words (route_mapping_contract),
    word_best, cand_stats, connect (route_score_step); kb_route_tokens (term_postings),
    kb_route_token_idf, kb_databases.
  Produces CTEs: q_tokens, token_weights, token_totals, token_hits, lexical, phrase_top, wins,
    signals (db_id, one column per name in ranker_signal_names(), prefixed f_).
-#}
{% macro route_signals_step(path='udf') -%}
  {{ return(adapter.dispatch('route_signals_step', 'dbrouter')(path)) }}
{%- endmacro %}

{% macro default__route_signals_step(path='udf') -%}
{%- set floor = dbrouter.get_var('dbrouter__example_floor') | float -%}
q_tokens as (
    select distinct phrase as token from cand_words
),
token_weights as (
    select q.token,
        coalesce(max(case when i.source = 'table' then i.idf end), max(n.idf_max)) as w_table,
        coalesce(max(case when i.source = 'name' then i.idf end), max(n.idf_max)) as w_name,
        coalesce(max(case when i.source = 'value' then i.idf end), max(n.idf_max)) as w_value,
        coalesce(max(case when i.source = 'example' then i.idf end), max(n.idf_max)) as w_example
    from q_tokens as q
    cross join (select ln(greatest(count(*), 2)) as idf_max from {{ dbrouter.kb_relation('kb_databases') }}) as n
    left join {{ dbrouter.kb_relation('kb_route_token_idf') }} as i on i.token = q.token
    group by q.token
),
token_totals as (
    {#- the word weights are summed exactly (float_agg), so a rerun adds them alike -#}
    select nullif({{ dbrouter.float_agg('sum', 'w_table') }}, 0) as t_table,
        nullif({{ dbrouter.float_agg('sum', 'w_name') }}, 0) as t_name,
        nullif({{ dbrouter.float_agg('sum', 'w_value') }}, 0) as t_value,
        nullif({{ dbrouter.float_agg('sum', 'w_example') }}, 0) as t_example
    from token_weights
),
token_hits as (
    {#- the route tokens are cut to the question's words (an uncorrelated IN: a semi-join on a few
        words) before the join and its grouping: DuckDB pushes a grouping on the join's keys below
        the join, and where the words are not a constant it pushes into the scan (the held routing
        query) it grouped every row of kb_route_tokens first (613,305 rows at 10,000 databases,
        ~0.4 s; a correlated EXISTS grouped them as well, to decorrelate) -#}
    select cw.db_id, cw.token,
        max(case when t.source = 'table' then 1 else 0 end) as in_table,
        max(case when t.source = 'name' then 1 else 0 end) as in_name,
        max(case when t.source = 'value' then 1 else 0 end) as in_value,
        max(case when t.source = 'example' then 1 else 0 end) as in_example
    from (select distinct db_id, phrase as token from cand_words) as cw
    join (select db_id, token, source
          from {{ dbrouter.term_postings('kb_route_tokens', 'token', '(select list(distinct phrase) from cand_words)',
                                         path, text='source', dbs='(select list(distinct db_id) from cand_words)') }} as rt
          where token in (select phrase from cand_words)) as t
        on t.db_id = cw.db_id and t.token = cw.token
    group by cw.db_id, cw.token
),
lexical as (
    select h.db_id,
        {{ dbrouter.float_agg('sum', 'case when h.in_table = 1 then w.w_table else 0 end') }} / max(tt.t_table) as lex_table,
        {{ dbrouter.float_agg('sum', 'case when h.in_name = 1 then w.w_name else 0 end') }} / max(tt.t_name) as lex_name,
        {{ dbrouter.float_agg('sum', 'case when h.in_value = 1 and h.in_name = 0 then w.w_value else 0 end') }} / max(tt.t_value) as lex_value,
        {{ dbrouter.float_agg('sum', 'case when h.in_example = 1 then w.w_example else 0 end') }} / max(tt.t_example) as lex_example
    from token_hits as h
    join token_weights as w on w.token = h.token
    cross join token_totals as tt
    group by h.db_id
),
phrase_top as (
    select word_index, max(similarity) as top_similarity from word_best group by word_index
),
wins as (
    select wb.db_id,
        sum(case when wb.similarity is not null and wb.similarity >= pt.top_similarity - 1e-9 then 1 else 0 end) * 1.0
            / count(*) as phrase_wins
    from word_best as wb
    join phrase_top as pt on pt.word_index = wb.word_index
    group by wb.db_id
),
signals as (
    select c.db_id,
        coalesce(sl.s_database, 0) as f_database,
        coalesce(sl.s_table, 0) as f_table,
        coalesce(sl.s_column, 0) as f_column,
        sl.trusted * greatest(coalesce(sl.s_example, 0) - {{ floor }}, 0) as f_example,
        sl.trusted * coalesce(sl.example_votes, 0) as f_example_votes,
        coalesce(st.semantic_score, 0) as f_semantic,
        case when coalesce(st.n_phrases, 0) = 0 then 1.0 else 1.0 - st.n_na * 1.0 / st.n_phrases end as f_mapped,
        case when coalesce(st.n_phrases - st.n_na, 0) = 0 or k.best_part_words = st.n_phrases - st.n_na then 1 else 0 end as f_connected,
        coalesce(w.phrase_wins, 0) as f_phrase_wins,
        coalesce(l.lex_table, 0) as f_lex_table,
        coalesce(l.lex_name, 0) as f_lex_name,
        coalesce(l.lex_value, 0) as f_lex_value,
        sl.trusted * coalesce(l.lex_example, 0) as f_lex_example,
        coalesce(sl.score, 0) as f_shortlist,
        case when sl.s_example is null then 0 else sl.trusted end as f_has_examples
    from candidates as c
    join shortlist as sl on sl.db_id = c.db_id
    left join cand_stats as st on st.db_id = c.db_id
    left join connect as k on k.db_id = c.db_id
    left join wins as w on w.db_id = c.db_id
    left join lexical as l on l.db_id = c.db_id
)
{%- endmacro %}

{#- The ranker's signal names, in the order ranker_score sums them and the evidence lists them. -#}
{% macro ranker_signal_names() -%}
{{ return(['database', 'table', 'column', 'example', 'example_votes', 'semantic', 'mapped', 'connected',
           'phrase_wins', 'lex_table', 'lex_name', 'lex_value', 'lex_example', 'shortlist', 'has_examples']) }}
{%- endmacro %}

{#- The learned ranker's score of a candidate: sum of weight x signal over ranker_signal_names(),
    weights from var dbrouter__ranker_weights (fitted by python -m dbrouter.tune.ranker on train splits).
    Args: prefix: the relation alias holding the f_<name> columns, with its dot ('' for none). -#}
{% macro ranker_score(prefix='') -%}
{%- set weights = dbrouter.get_var('dbrouter__ranker_weights') -%}
{%- set names = dbrouter.ranker_signal_names() -%}
{%- for key in weights if key not in names -%}
  {{ exceptions.raise_compiler_error("ranker_score: adapter " ~ adapter.type() ~ ", var dbrouter__ranker_weights has an unknown signal '" ~ key ~ "' (known: " ~ names | join(', ') ~ ")") }}
{%- endfor -%}
({%- for name in names %}{{ ' + ' if not loop.first }}{{ weights.get(name, 0) | float }} * coalesce({{ prefix }}f_{{ name }}, 0){% endfor -%})
{%- endmacro %}

{#- Abstention: true for the first-ranked candidate (unless the question is a stored example question)
    when a test of abstain_test() refuses it; false everywhere when var dbrouter__abstain_below is null.
    Read in the final select of route_score_step, where rank, stage and rank_score are columns. -#}
{% macro abstain_condition() -%}
{%- if dbrouter.get_var('dbrouter__abstain_below') is none -%}
false
{%- else -%}
({{ dbrouter.abstain_test() }} is not null)
{%- endif -%}
{%- endmacro %}

{#- Which abstention test refuses the first-ranked candidate (NULL: none; only rank 1 of a question
    that is not a stored example question can be refused), in order:
      'vocabulary'     the question has content words and none is in the vocabulary of a database
                       the caller may see (kb_vocabulary): nothing in this KB is about it;
      'example_floor'  its first-ranking score is below the KB's own floor from its example
                       questions (kb_routing_calibration.abstain_floor, per path; >= 50 examples);
      'intent'         without that floor, the intent probe (intent_probe_columns: a linear model
                       of the question's vector, fitted on benchmark train questions against
                       off-topic ones) scores it below its threshold: not a question one asks a
                       database (chit-chat, how-to, requests), whatever this KB holds. Not beside
                       the example floor: that floor spends the KB's whole refusal budget (2%) and
                       the two together refused 0.028-0.057 of bird's answerable questions;
      'offtopic_floor' without that floor and without an intent probe for this embedder, below
                       the median best score of the shipped off-topic probes on this KB and path
                       (kb_routing_calibration.offtopic_floor); where the probe applies it replaces
                       this floor (on train questions it refuses more off-topic and fewer answerable
                       ones: docs/decisions/adr-0017-answers-a-user-can-trust-round-2-issue-34-2026-11-27.md);
      'ranker'         with neither (an empty probe seed), its ranker score is below var
                       dbrouter__abstain_below (fitted on the UDF path by python -m dbrouter.tune.ranker).
    route_query_json's reason names the test and the threshold. -#}
{% macro abstain_test() -%}
{%- set below = dbrouter.get_var('dbrouter__abstain_below') -%}
case when rank <> 1 or example_match = 1 then null
     when n_terms > 0 and n_known = 0 then 'vocabulary'
     when abstain_floor is not null then case when first_score < abstain_floor then 'example_floor' end
     when intent_score < intent_floor then 'intent'
     when intent_floor is not null then null
     when offtopic_floor is not null then case when first_score < offtopic_floor then 'offtopic_floor' end
{%- if below is not none %}
     when stage = 0 and rank_score < {{ below | float }} then 'ranker'
{%- endif %}
end
{%- endmacro %}
