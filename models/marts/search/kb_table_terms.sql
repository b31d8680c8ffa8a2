-- The shortlist's lexical channel: one row per (table, term) with the term's BM25 weight in that
-- table, so that a question's lexical score of a table is the sum of the weights of its content
-- words found there (route_shortlist_step). A table's terms are the content words
-- (dbrouter_content_words: the question's own tokenisation - runs of [a-z0-9], so `_` and `.`
-- split names - stop words dropped, singularised) of its database's name, its name, label and
-- description, and its columns' labels and descriptions, each term once (a term repeated by 3,000
-- columns of a wide table proves no more than once: BM25 with tf = 1). A wide database competes by
-- its best table, not by its width.
--   weight = idf * (k1 + 1) / (1 + k1 * (1 - b + b * n_terms / avg_terms))
--   idf    = ln(1 + (N - df + 0.5) / (df + 0.5)), N tables, df tables holding the term
-- k1 and b are BM25's usual constants (vars dbrouter__lexical_k1 / dbrouter__lexical_b).
-- The weight is rounded to a multiple of 2^-32 (2.3e-10; BM25 weights are below 100): every sum of
-- such values below 2^21 is exact in a double, in any order, so a question's score of a table is
-- the same whoever adds its weights and in whatever order (route_shortlist_step in SQL, or
-- dbrouter_best_text_sums in the UDF process) without rounding each to a DECIMAL first (float_agg).
{%- set k1 = dbrouter.get_var('dbrouter__lexical_k1') | float %}
{%- set b = dbrouter.get_var('dbrouter__lexical_b') | float %}
with texts as (
    select db_id, table_name, coalesce(nullif(column_label, ''), column_name) as text
    from {{ ref('kb_columns') }}
    union all
    select db_id, table_name, column_description
    from {{ ref('kb_columns') }}
    where nullif(column_description, '') is not null
    union all
    select db_id, table_name,
        db_id || ' ' || table_name || ' ' || coalesce(nullif(table_label, ''), '') || coalesce(' ' || table_description, '')
    from {{ ref('kb_tables') }}
),
words as (
    select db_id, table_name, dbrouter_content_words(text) as toks from texts
),
terms as (
    select distinct db_id, table_name, element as term
    from ({{ dbrouter.unnest_indexed('words', 'toks', ['db_id', 'table_name']) }}) as u
),
lengths as (
    select db_id, table_name, count(*) as n_terms from terms group by db_id, table_name
),
totals as (
    select count(*) as n_tables, avg(n_terms) as avg_terms from lengths
),
df as (
    select term, count(*) as n_tables_with from terms group by term
)
select t.db_id, t.table_name, t.term,
    round(ln(1 + (s.n_tables - d.n_tables_with + 0.5) / (d.n_tables_with + 0.5))
          * {{ k1 + 1 }} / (1 + {{ k1 }} * (1 - {{ b }} + {{ b }} * l.n_terms / s.avg_terms))
          * 4294967296.0) / 4294967296.0 as weight
from terms as t
join lengths as l on l.db_id = t.db_id and l.table_name = t.table_name
join df as d on d.term = t.term
cross join totals as s
