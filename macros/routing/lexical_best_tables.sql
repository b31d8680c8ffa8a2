{#-
  The shortlist's lexical channel per database: (db_id, s_lexical, lexical_table), the BM25 score
  of its best table for the question's content words and that table, of every database with a
  table holding one of them. A table's score is the sum of its words' weights in kb_table_terms
  (each word once: tf = 1); a database scores by its best table (ties to the larger name), so
  width alone earns nothing.

  Args:
    terms: the question's content words, each once: a relation with one column `term`.
    path: 'udf' or 'sql' (route_paths).
-#}
{% macro lexical_best_tables(terms, path) -%}
{%- if path not in ('udf', 'sql') -%}
  {{ exceptions.raise_compiler_error("lexical_best_tables: adapter " ~ adapter.type() ~ ", argument path must be 'udf' or 'sql', got " ~ path) }}
{%- endif -%}
  {{ return(adapter.dispatch('lexical_best_tables', 'dbrouter')(terms, path)) }}
{%- endmacro %}

{#- The words' rows (term_postings), summed per table, the best per database. The weights are
    multiples of 2^-32 (kb_table_terms), so a plain sum is exact and gives the same total in any
    order: no DECIMAL per row (float_agg), which at 10,000 synthetic databases was ~9 ms of the
    channel's ~16. -#}
{% macro default__lexical_best_tables(terms, path) -%}
select db_id, max(bm25) as s_lexical, {{ dbrouter.top_value('table_name', 'bm25', 'table_name') }} as lexical_table
from (
    select *, {{ dbrouter.top_n_rank('db_id', 'bm25 desc, table_name desc') }} as rn
    from (
        select t.db_id, t.table_name, sum(t.weight) as bm25
        from {{ dbrouter.term_postings('kb_table_terms', 'term', '(select list(term) from ' ~ terms ~ ')', path,
                                       text='table_name', number='weight') }} as t
        join {{ terms }} as q on q.term = t.term
        group by t.db_id, t.table_name
    ) as lexical_tables
) as r
group by db_id
{%- endmacro %}

{#- DuckDB's UDF path, where term_postings reads kb_table_terms from the UDF process: the sums and
    the best table of each database come from there too (dbrouter_best_text_sums,
    python_udfs/postings.py best_sums), the same totals and ties, instead of the words' rows handed
    to SQL to be summed and ranked (10,000 synthetic databases: ~48,000 rows, ~30,000 tables). -#}
{% macro duckdb__lexical_best_tables(terms, path) -%}
{%- if not dbrouter._reads_postings('kb_table_terms', path) -%}
{{ dbrouter.default__lexical_best_tables(terms, path) }}
{%- else -%}
select u.b.db_id as db_id, u.b.total as s_lexical, u.b.text as lexical_table
from (select unnest(dbrouter_best_text_sums('{{ dbrouter.kb_relation('kb_table_terms') }}', 'term', 'table_name',
          'weight', (select list(term) from {{ terms }}))) as b) as u
{%- endif -%}
{%- endmacro %}
