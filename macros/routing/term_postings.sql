{#-
  A lexical table's rows for the words a query asks about, as a relation to select from: db_id,
  the term column and the other columns named, with the table's own names and types. The rows of
  every word in `terms` at least; the caller still joins them with its words (the default is the
  whole table).

  Args:
    relation: the lexical KB mart (kb_table_terms, kb_vocabulary or kb_route_tokens).
    term: its term column.
    terms: SQL expression of the words asked, a VARCHAR list (e.g. `(select list(term) from q_terms)`).
    path: 'udf' or 'sql' (route_paths).
    text: another VARCHAR column to keep, or none.
    number: a DOUBLE column to keep, or none.
    dbs: SQL expression of the databases whose rows are wanted, a VARCHAR list, or none (every
      database's). Like the words, the caller still joins with its databases.
-#}
{% macro term_postings(relation, term, terms, path, text=none, number=none, dbs=none) -%}
{%- if relation not in ('kb_table_terms', 'kb_vocabulary', 'kb_route_tokens') -%}
  {{ exceptions.raise_compiler_error("term_postings: adapter " ~ adapter.type() ~ ", argument relation must be kb_table_terms, kb_vocabulary or kb_route_tokens, got " ~ relation) }}
{%- endif -%}
  {{ return(adapter.dispatch('term_postings', 'dbrouter')(relation, term, terms, path, text, number, dbs)) }}
{%- endmacro %}

{#- The table itself: the caller's join with its words keeps their rows (on a planned query whose
    words are a constant, DuckDB pushes them into the scan). -#}
{% macro default__term_postings(relation, term, terms, path, text=none, number=none, dbs=none) -%}
{{ dbrouter.kb_relation(relation) }}
{%- endmacro %}

{#- DuckDB's UDF path (var dbrouter__vector_index), for a table of at least
    dbrouter__term_postings_min_rows rows when the functions are created: the table's rows ordered
    by term are held in the UDF process (dbrouter_term_postings, python_udfs/postings.py), which
    returns the asked words' rows (of the databases asked, when `dbs` is given: the re-rank's
    candidates' route tokens). A scan reads every row; in the held routing statement, whose
    words are not a constant, the three lexical tables were ~150 ms of a question's operators at
    10,000 synthetic databases (2.0M rows together), and they bounded which KBs could be held at
    all. A call costs ~0.6 ms more than a small table's scan (an Arrow UDF's result converted),
    so a small table is still scanned (adr-0030). -#}
{% macro duckdb__term_postings(relation, term, terms, path, text=none, number=none, dbs=none) -%}
{%- if not dbrouter._reads_postings(relation, path) -%}
{{ dbrouter.default__term_postings(relation, term, terms, path, text, number, dbs) }}
{%- else -%}
(select u.p.db_id as db_id, u.p.term as {{ term }}
    {%- if text %}, u.p.text as {{ text }}{% endif %}
    {%- if number %}, u.p.number as {{ number }}{% endif %}
 from (select unnest(dbrouter_term_postings('{{ dbrouter.kb_relation(relation) }}', '{{ term }}',
           {% if text %}'{{ text }}'{% else %}null{% endif %}, {% if number %}'{{ number }}'{% else %}null{% endif %},
           {{ terms }}, {{ dbs if dbs else 'null' }})) as p) as u)
{%- endif -%}
{%- endmacro %}

{#- Whether DuckDB's UDF path reads `relation` from the UDF process (duckdb__term_postings; also
    lexical_best_tables): the vector index on, and the table at least dbrouter__term_postings_min_rows. -#}
{% macro _reads_postings(relation, path) -%}
{{ return(path == 'udf' and dbrouter.get_var('dbrouter__vector_index')
          and dbrouter._table_rows(relation) >= dbrouter.get_var('dbrouter__term_postings_min_rows') | int) }}
{%- endmacro %}

{#- The rows of a KB mart now (0 while dbt parses: nothing is created then). -#}
{% macro _table_rows(relation) -%}
{%- if not execute -%}{{ return(0) }}{%- endif -%}
{{ return(run_query("select count(*) from " ~ dbrouter.kb_relation(relation)).columns[0].values()[0] | int) }}
{%- endmacro %}
