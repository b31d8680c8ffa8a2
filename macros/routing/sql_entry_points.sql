{#-
  The SQL entry points of routing and retrieval, declared once. Every consumer reads this list:
  the DuckDB macros and the Snowflake functions (create_route_functions, whose bodies come from
  sql_entry_point_body and the retrieval function macros), the plain-named DuckDB wrappers
  (create_path_entry_points), the catalog table kb_sql_functions, and docs/reference.md's function
  table (tests/functional/test_sql_entry_points.py checks it, and that both dialects create
  exactly these names, parameters and result columns).

  Each entry:
    name         the function name
    kind         'table' (DuckDB table macro / Snowflake UDTF) or 'scalar'
    paths        true: one per routing path on DuckDB (`<name>_udf`, `<name>_sql`, and the plain
                 name calling one of them); false: one function for the build
    plain        false: on DuckDB no plain-named wrapper of the paths (only `<name>_udf` and
                 `<name>_sql`): an entry the library calls by its path; a plain name's temp macro
                 costs every connection ~12 ms of binding (dbrouter.connect, each serve session)
    params       (name, type, default or none); types: varchar, integer, double, json, varchar[]
    returns      the result columns [(name, type)] of a table function, the type of a scalar one
    description  one line, for kb_sql_functions and docs/reference.md
-#}
{% macro sql_entry_points() -%}
{%- set sk = dbrouter.get_var('dbrouter__shortlist_k') | int -%}
{%- set ranking = [('rank', 'integer'), ('db_id', 'varchar'), ('score', 'double'), ('shortlist_rank', 'integer'),
                   ('shortlist_score', 'double'), ('evidence', 'json')] -%}
{{ return([
    {'name': 'route_query', 'kind': 'scalar', 'paths': true,
     'params': [('question', 'varchar', none)], 'returns': 'varchar',
     'description': 'the db_id that best answers the question, or NULL (empty question, no match, or abstention)'},
    {'name': 'route_query_json', 'kind': 'scalar', 'paths': true,
     'params': [('question', 'varchar', none), ('k', 'integer', 5)], 'returns': 'json',
     'description': 'JSON {question, path, ranking, reason, abstained}'},
    {'name': 'route_query_json_mapped', 'kind': 'scalar', 'paths': true, 'plain': false,
     'params': [('question', 'varchar', none), ('mappings', 'varchar', none), ('k', 'integer', 5),
                ('shortlist_k', 'integer', sk)], 'returns': 'json',
     'description': 'route_query_json over route_query_ranked_mapped (the LLM path): the same keys and reasons; on DuckDB as route_query_json_mapped_udf / _sql only'},
    {'name': 'route_query_ranked', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('k', 'integer', 5), ('shortlist_k', 'integer', sk)],
     'returns': ranking, 'description': 'rank, db_id, the score that orders them (the ranker score; NULL below the re-rank depth), the shortlist rank and score, and the evidence JSON of the top k'},
    {'name': 'route_query_ranked_mapped', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('mappings', 'varchar', none), ('k', 'integer', 5),
                ('shortlist_k', 'integer', sk)],
     'returns': ranking, 'description': 'the ranking with phrase mappings given as JSON (the LLM path)'},
    {'name': 'route_shortlist', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('k', 'integer', 10)],
     'returns': [('shortlist_rank', 'integer'), ('db_id', 'varchar'), ('score', 'double'), ('schema_score', 'double'),
                 ('database_similarity', 'double'), ('table_similarity', 'double'), ('column_similarity', 'double'),
                 ('example_similarity', 'double'), ('top_table', 'varchar'), ('top_column', 'varchar'),
                 ('first_stage_rank', 'integer'), ('dense_rank', 'integer'), ('lexical_score', 'double'),
                 ('lexical_table', 'varchar'), ('lexical_rank', 'integer')],
     'description': 'the first ranking with its per-signal similarities and its dense and lexical ranks'},
    {'name': 'route_phrase_mappings', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('k', 'integer', 10)],
     'returns': [('shortlist_rank', 'integer'), ('db_id', 'varchar'), ('word_index', 'integer'), ('phrase', 'varchar'),
                 ('span', 'varchar'), ('table_name', 'varchar'), ('column_name', 'varchar'), ('similarity', 'double'),
                 ('is_exact', 'boolean'), ('match_kind', 'varchar')],
     'description': 'phrase -> table.column mappings of the top k of the shortlist'},
    {'name': 'route_shortlist_k', 'kind': 'scalar', 'paths': false, 'params': [], 'returns': 'integer',
     'description': 'the re-rank depth of this build'},
    {'name': 'route_first_stage_k', 'kind': 'scalar', 'paths': false, 'params': [], 'returns': 'integer',
     'description': 'how many databases the first stage hands on to the column documents (this build)'},
    {'name': 'route_ranker_weights', 'kind': 'scalar', 'paths': false, 'params': [], 'returns': 'json',
     'description': "the learned ranker's weights of this build"},
    {'name': 'route_abstain_below', 'kind': 'scalar', 'paths': false, 'params': [], 'returns': 'double',
     'description': 'the abstention threshold of this build (NULL: never abstain)'},
    {'name': 'retrieve_statements', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('db', 'varchar', none), ('k', 'integer', 4)],
     'returns': [('rank', 'integer'), ('db_id', 'varchar'), ('statement_id', 'varchar'), ('statement_text', 'varchar'),
                 ('expression', 'varchar'), ('snippet', 'varchar'), ('structure_status', 'varchar'),
                 ('score', 'double'), ('matched_text', 'varchar')],
     'description': 'domain statements by sub-string retrieval'},
    {'name': 'retrieve_examples', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('db', 'varchar', none), ('k', 'integer', 3)],
     'returns': [('rank', 'integer'), ('stage', 'varchar'), ('db_id', 'varchar'), ('example_id', 'varchar'),
                 ('question', 'varchar'), ('sql_text', 'varchar'), ('tables_used', 'varchar[]'), ('score', 'double'),
                 ('threshold', 'double'), ('similarity', 'double')],
     'description': 'stored question/SQL examples (exact, normalized, main clause, expanded)'},
    {'name': 'retrieve_columns', 'kind': 'table', 'paths': true,
     'params': [('question', 'varchar', none), ('db', 'varchar', none), ('k', 'integer', 10),
                ('exclude', 'varchar[]', [])],
     'returns': [('rank', 'integer'), ('db_id', 'varchar'), ('table_name', 'varchar'), ('column_name', 'varchar'),
                 ('data_type', 'varchar'), ('is_primary_key', 'boolean'), ('is_foreign_key', 'boolean'),
                 ('references_text', 'varchar'), ('column_description', 'varchar'), ('value_description', 'varchar'),
                 ('sample_values', 'varchar[]'), ('score', 'double')],
     'description': 'the columns of database db closest to the question'},
]) }}
{%- endmacro %}

{#- The signature of an entry as docs/reference.md and kb_sql_functions write it: name(p, q := 5). -#}
{% macro sql_entry_point_signature(entry) -%}
{{ entry.name }}({% for p, t, d in entry.params %}{{ p }}{% if d is not none %} := {{ d | tojson if d is iterable and d is not string else d }}{% endif %}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{#- What an entry returns, in words: its columns, or its scalar type. -#}
{% macro sql_entry_point_returns(entry) -%}
{%- if entry.kind == 'table' -%}
{% for c, t in entry.returns %}{{ c }}{{ ', ' if not loop.last }}{% endfor %}
{%- else -%}
{{ entry.returns }}
{%- endif -%}
{%- endmacro %}
