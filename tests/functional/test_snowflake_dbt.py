"""The KB on Snowflake, as far as it can be checked without an account.

* Built under fakesnow (Snowflake SQL emulated over DuckDB, dbt-snowflake talking to its server):
  the seeds, the staging views and every model up to the join graph (implied edges by regular
  expression, the Snowflake recursive CTEs of kb_table_reachability / kb_table_components), with
  their data tests; the rows must equal those of the DuckDB build of the same sources.
* Not built under fakesnow, because it emulates neither Python UDFs nor VECTOR nor Cortex:
  int_examples_described, int_statements_structured (Python UDFs), int_documents_rendered and the
  marts on it, kb_embedding_cache and the marts on the vectors. These, the route functions and
  the UDF DDL are compiled for the Snowflake target and their SQL parsed with sqlglot's snowflake
  dialect: it must call the Snowflake functions and none of DuckDB's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

import python_udfs.snowflake_udfs as handlers
import python_udfs.udfs as text_udfs
from tests.conftest import ROOT
from tests.fakesnow_server import PROFILE, connect, env_for, running_fakesnow

DBT = str(Path(sys.executable).parent / "dbt")
DATABASE = "DBROUTER"
EMULATED_SELECTION = ("+kb_table_reachability +kb_table_components +kb_join_edges +kb_foreign_keys "
                      "+kb_ingest_issues +kb_statement_exemplars +int_database_schemas_listed stg_llm__statement_structures "
                      "stg_llm__example_descriptors")
# Models the emulated build must run (the join graph and what it reads) ...
EMULATED_CORE = {
    "stg_catalog__columns", "stg_catalog__databases", "stg_catalog__foreign_keys", "stg_catalog__tables",
    "stg_llm__statement_structures", "stg_llm__example_descriptors", "int_columns_keyed",
    "int_foreign_keys_validated", "int_join_edges_inferred", "int_join_edges_unioned", "int_tables_described",
    "int_table_shards_grouped",
    "int_database_schemas_listed", "kb_foreign_keys", "kb_join_edges", "kb_table_components", "kb_table_reachability",
}
# ... and the ones it cannot: Python UDFs, Cortex and VECTOR downstream.
NOT_EMULATED = {"int_examples_described", "int_statements_structured", "int_documents_rendered", "kb_documents",
                "kb_embedding_cache", "kb_document_embeddings", "kb_column_phrases", "kb_tables", "kb_columns",
                "kb_examples", "kb_domain_statements", "kb_routing_calibration", "kb_example_thresholds"}
# Called as functions, these exist in DuckDB only (Snowflake would fail or, for LEN on an array,
# mean something else).
DUCKDB_ONLY = {"list", "list_avg", "list_contains", "list_has_all", "list_transform", "list_distinct",
               "list_intersect", "list_concat", "arg_max", "array_cosine_similarity", "json_object", "from_json",
               "json_extract", "json_extract_string", "generate_subscripts", "unnest", "string_split",
               "regexp_full_match", "len", "isnan", "json_group_array", "string_agg", "range", "dbrouter_cosine"}


def _dbt(args: list[str], env: dict, workdir: Path) -> subprocess.CompletedProcess:
    cmd = [DBT, *args, "--project-dir", str(ROOT), "--profiles-dir", str(workdir / "profiles"),
           "--target-path", str(workdir / "target"), "--log-path", str(workdir / "logs")]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=str(workdir),
                          env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **env})


def _inline(sql: str, env: dict, workdir: Path, variables: dict | None = None) -> str:
    args = ["compile", "--inline", sql, "--output", "json", "--log-format", "json"]
    if variables:
        args += ["--vars", json.dumps(variables)]
    proc = _dbt(args, env, workdir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    for line in reversed(proc.stdout.splitlines()):
        data = json.loads(line).get("data", {})
        if "compiled" in data:
            return data["compiled"]
    raise AssertionError(f"no compiled SQL in dbt's output:\n{proc.stdout[-2000:]}")


@pytest.fixture(scope="module")
def sf(tmp_path_factory, built_kb):
    """fakesnow server with the demo's raw snapshot loaded, and the emulated part of the KB built."""
    work = tmp_path_factory.mktemp("snowflake")
    (work / "profiles").mkdir()
    (work / "profiles" / "profiles.yml").write_text(PROFILE)
    with running_fakesnow(work) as server:
        env = env_for(server, DATABASE)
        conn = connect(server)
        conn.cursor().execute(f"create database if not exists {DATABASE}")
        conn.cursor().execute(f"create schema if not exists {DATABASE}.KB")
        load = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "load", "--sources",
                               str(built_kb["sources"])], capture_output=True, text=True,
                              env={**os.environ, **env})
        assert load.returncode == 0, load.stderr
        build = _dbt(["build", "--select", *EMULATED_SELECTION.split(), "--indirect-selection", "cautious"], env, work)
        yield {"server": server, "env": env, "work": work, "build": build, "load": load, "sources": built_kb["sources"],
               "conn": connect(server, database=DATABASE, schema="KB")}
        conn.close()


def test_raw_snapshot_loads_into_snowflake_without_the_secret(sf):
    cur = sf["conn"].cursor()
    assert cur.execute("select count(*) from dbrouter_raw.databases").fetchall()[0][0] == 10
    assert cur.execute("select count(*) from dbrouter_raw.columns where array_size(sample_values) > 0"
                       ).fetchall()[0][0] > 100
    assert sf["server"]["password"] not in sf["load"].stdout + sf["load"].stderr


def test_query_log_journal_loads_once_into_snowflake(sf, tmp_path):
    from dbrouter.feedback.log import LogEntry, append

    log = tmp_path / "q.jsonl"
    append(log, LogEntry("serve", "route_query", "It's about singers", user="ann", ranking=["singer"], chosen="singer",
                         seconds=0.2, ts=1_700_000_000.5))
    append(log, LogEntry("mcp", "run_sql", None, sql="select 1", status="error", error="boom"))
    for expected in (2, 0):  # the second load adds nothing: rows are keyed by their line
        load = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "load", "--sources",
                               str(sf["sources"]), "--query-log", str(log)], capture_output=True, text=True,
                              env={**os.environ, **sf["env"]})
        assert load.returncode == 0, load.stderr
        assert f"; {expected} new query log entries" in load.stderr
    rows = sf["conn"].cursor().execute("select tool, question, asked_by, chosen, to_varchar(logged_at) "
                                       "from dbrouter_user.query_log order by tool").fetchall()
    assert [r[:4] for r in rows] == [("route_query", "It's about singers", "ann", "singer"), ("run_sql", None, None, None)]
    assert rows[0][4].startswith("2023-11-14 22:13:20.5")


def test_policy_roles_become_snowflake_grants(sf, tmp_path):
    policy = tmp_path / "access.yml"
    policy.write_text('roles:\n  analyst: [concert_singer, "flight_*"]\n  admin: ["*"]\n'
                      'users:\n  alice: {password_env: X, roles: [analyst]}\n')
    for _ in range(2):  # replaced, not appended
        proc = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "grants", "--access", str(policy)],
                              capture_output=True, text=True, env={**os.environ, **sf["env"]})
        assert proc.returncode == 0, proc.stderr
    assert "3 patterns of 2 roles (ANALYST, ADMIN)" in proc.stderr
    rows = sf["conn"].cursor().execute("select role_name, db_pattern, db_like from dbrouter_user.role_databases "
                                       "order by 1, 2").fetchall()
    assert rows == [("ADMIN", "*", "%"), ("ANALYST", "concert_singer", "concert\\_singer"),
                    ("ANALYST", "flight_*", "flight\\_%")]
    printed = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "grants", "--access", str(policy),
                              "--print"], capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    assert printed.returncode == 0 and printed.stdout.startswith("begin;\ndelete from dbrouter_user.role_databases;")
    bad = tmp_path / "bad.yml"
    bad.write_text("roles:\n  analyst: ['flight_[12]']\n")
    proc = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "grants", "--access", str(bad), "--print"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "use * and ? only on Snowflake" in proc.stderr


def test_emulated_part_of_the_kb_builds_with_its_tests(sf):
    build = sf["build"]
    assert build.returncode == 0, build.stdout[-4000:]
    results = json.loads((sf["work"] / "target" / "run_results.json").read_text())["results"]
    models = {r["unique_id"].split(".")[-1] for r in results if r["unique_id"].startswith("model.")}
    assert models >= EMULATED_CORE and not (models & NOT_EMULATED), models
    assert all(r["status"] in ("success", "pass") for r in results), [r for r in results if r["status"] not in
                                                                      ("success", "pass")]
    tests = {r["unique_id"].split(".")[2] for r in results if r["unique_id"].startswith("test.")}
    assert {"assert_reachability_is_symmetric", "assert_join_edges_are_symmetric"} <= tests


@pytest.mark.parametrize("table, key", [
    ("kb_join_edges", "edge_key, rule, is_declared"),
    ("kb_foreign_keys", "column_key, ref_column_key"),
    ("kb_table_reachability", "pair_key, hops"),
    ("kb_table_components", "table_key, component, declared_component"),
    ("int_tables_described", "table_key, row_count, n_columns, table_ddl"),
    ("int_columns_keyed", "column_key, type_family, is_single_primary_key, references_text"),
])
def test_emulated_marts_equal_the_duckdb_build(sf, built_kb, table, key):
    on_snowflake = sf["conn"].cursor().execute(f"select {key} from {DATABASE}.KB.{table}").fetchall()
    with duckdb.connect(str(built_kb["warehouse"]), read_only=True) as con:
        on_duckdb = con.execute(f"select {key} from main.{table}").fetchall()
    assert on_duckdb, f"{table} is empty in the DuckDB build"
    assert sorted(map(tuple, on_snowflake)) == sorted(map(tuple, on_duckdb))


def test_schema_json_aggregate_matches_duckdb(sf, built_kb):
    rows = sf["conn"].cursor().execute(f"select db_id, schema_json from {DATABASE}.KB.int_database_schemas_listed").fetchall()
    with duckdb.connect(str(built_kb["warehouse"]), read_only=True) as con:
        expected = con.execute("select db_id, schema_json from main.int_database_schemas_listed").fetchall()
    assert len(rows) == len(expected) == 10
    assert {db: json.loads(text) for db, text in rows} == {db: json.loads(text) for db, text in expected}


def _calls(sql: str) -> set[str]:
    """Lower-case names of the functions a SQL text calls (a name followed by '('), qualified ones
    both whole (``snowflake.cortex.embed_text_768``) and by their last part."""
    tokens = sqlglot.tokenize(sql, read="snowflake")
    names = set()
    for i in range(len(tokens) - 1):
        if tokens[i + 1].token_type != sqlglot.TokenType.L_PAREN or tokens[i].token_type in (
                sqlglot.TokenType.STRING, sqlglot.TokenType.L_PAREN, sqlglot.TokenType.R_PAREN):
            continue
        parts, j = [tokens[i].text], i
        while j >= 2 and tokens[j - 1].token_type == sqlglot.TokenType.DOT:
            parts.insert(0, tokens[j - 2].text)
            j -= 2
        names.update({".".join(parts).lower(), parts[-1].lower()})
    return names


def _bodies(ddl: str) -> list[str]:
    return re.findall(r"\$\$(.*?)\$\$", ddl, re.S)


@pytest.fixture(scope="module")
def compiled(sf):
    """Every model compiled for the Snowflake target (Cortex 768 embedder, the default)."""
    proc = _dbt(["compile"], sf["env"], sf["work"])
    assert proc.returncode == 0, proc.stdout[-4000:]
    root = sf["work"] / "target" / "compiled" / "dbrouter" / "models"
    return {p.stem: p.read_text() for p in root.rglob("*.sql")}


def test_every_compiled_model_parses_as_snowflake_sql_without_duckdb_functions(compiled):
    assert len(compiled) >= 40
    for name, sql in compiled.items():
        sqlglot.parse(sql, read="snowflake")  # raises on a syntax error
        assert not (_calls(sql) & DUCKDB_ONLY), (name, _calls(sql) & DUCKDB_ONLY)
        assert " as materialized" not in sql.lower(), name


def test_compiled_models_call_the_snowflake_functions(compiled):
    assert "snowflake.cortex.embed_text_768" in _calls(compiled["kb_embedding_cache"])
    assert "'snowflake-arctic-embed-m-v1.5'" in compiled["kb_embedding_cache"]
    assert {"parse_json"} <= _calls(compiled["int_examples_described"])
    assert {"array_agg", "to_json", "array_construct"} <= _calls(compiled["int_database_schemas_listed"])
    assert "flatten" in _calls(compiled["int_documents_rendered"])
    assert "array_size" in _calls(compiled["int_documents_rendered"])
    assert "vector_cosine_similarity" in _calls(compiled["kb_routing_calibration"])
    assert {"current_available_roles", "array_contains"} <= _calls(compiled["kb_allowed_databases"])
    assert "role_databases" in compiled["kb_allowed_databases"]
    assert "'cortex:snowflake-arctic-embed-m-v1.5'" in compiled["int_documents_rendered"]  # the vectors' label
    for model in ("kb_table_reachability", "kb_table_components"):
        withs = [w for w in sqlglot.parse_one(compiled[model], read="snowflake").find_all(exp.With)]
        assert any(w.args.get("recursive") for w in withs), model
        assert " union all" in compiled[model].lower() and " union\n" not in compiled[model].lower()


def test_functions_are_not_created_while_the_marts_they_read_are_missing(sf):
    """Snowflake checks a UDF body when it is created: with the embedding marts not built the
    creating macros emit a harmless note instead of DDL, and log which marts are missing."""
    sql = _inline("{{ dbrouter.create_route_functions() }} | {{ dbrouter.create_retrieval_functions() }}",
                  sf["env"], sf["work"])
    assert sql.split("|")[0].strip() == "select 'route functions not created: marts missing' as dbrouter_note"
    assert sql.split("|")[1].strip() == "select 'retrieval functions not created: marts missing' as dbrouter_note"


def test_route_functions_compile_to_snowflake_udfs_over_vectors(sf):
    ddl = _inline("{{ dbrouter.default__create_route_functions() }}\n{{ dbrouter.default__create_retrieval_functions() }}",
                  sf["env"], sf["work"])
    statements = sqlglot.parse(re.sub(r"\$\$.*?\$\$", "'body'", ddl, flags=re.S), read="snowflake")
    created = {s.this.this.name.lower() for s in statements if isinstance(s, exp.Create)}
    assert created == {"route_shortlist", "route_phrase_mappings", "route_query_ranked", "route_query_ranked_mapped",
                       "route_shortlist_k", "route_first_stage_k", "route_query", "route_query_json", "route_query_json_mapped",
                       "retrieve_columns", "retrieve_statements",
                       "retrieve_examples", "route_ranker_weights", "route_abstain_below"}
    bodies = _bodies(ddl)
    assert len(bodies) == len(created)
    calls = set()
    for body in bodies:
        sqlglot.parse(body, read="snowflake")
        calls |= _calls(body)
        assert " as materialized" not in body.lower()
    assert not (calls & DUCKDB_ONLY), calls & DUCKDB_ONLY
    assert {"vector_cosine_similarity", "snowflake.cortex.embed_text_768", "object_construct_keep_null", "flatten",
            "parse_json", "dbrouter_question_spans", "dbrouter_content_words", "array_except",
            "route_query_ranked", "dbrouter_substrings", "dbrouter_normalize_question", "array_intersection"} <= calls
    assert re.search(r"create or replace function \w+\.route_query\(question varchar\)\s+returns varchar", ddl)
    scoped = [b for b in bodies if "kb_allowed_databases" in b.lower()]  # the caller's roles' databases only
    assert len(scoped) >= 6, len(scoped)


def test_udf_ddl_creates_python_functions_from_the_staged_code(sf):
    ddl = _inline("{{ dbrouter.snowflake_udf_statements() | join(';\\n') }};\n{{ dbrouter.embed_sql('t') }}",
                  sf["env"], sf["work"], {"dbrouter__snowflake_embedder": "python_udf",
                                          "dbrouter__snowflake_python_embedder": "hash"})
    *udfs, embed_call = ddl.split(";\n")
    parsed = [sqlglot.parse_one(re.sub(r"\$\$.*?\$\$", "'body'", u, flags=re.S), read="snowflake") for u in udfs]
    names = {p.this.this.name.lower() for p in parsed}
    assert names == set(handlers.UDFS) | {"embed", "embed_phrase", "dbrouter_embedder"}
    for sql in udfs:
        if "language python" not in sql:
            continue
        assert "runtime_version = '3.11'" in sql and "imports = ('@dbrouter_stage/dbrouter_udfs.zip'" in sql
        module, handler = re.search(r"handler = 'python_udfs\.(snowflake_udfs|udfs)\.(\w+)'", sql).groups()
        assert callable(getattr(handlers if module == "snowflake_udfs" else text_udfs, handler)), handler
    assert "embed_hash" in ddl and "embed_phrase_hash" in ddl
    assert embed_call.strip() == "cast(embed(t) as vector(float, 384))"


def test_cortex_1024_embedder_and_model_follow_the_var(sf):
    sql = _inline("{{ dbrouter.embed_sql('t') }} | {{ dbrouter.embedding_dim() }} | {{ dbrouter.embedder_label() }}",
                  sf["env"], sf["work"], {"dbrouter__snowflake_embedder": "cortex_1024"})
    embed, dim, label = (part.strip() for part in sql.split("|"))
    assert "snowflake.cortex.embed_text_1024('snowflake-arctic-embed-l-v2.0', t)" in embed
    assert (dim, label) == ("1024", "cortex:snowflake-arctic-embed-l-v2.0")


def test_snowflake_shortlist_sql_ranks_as_the_duckdb_macro(sf, built_kb):
    """Step 1 of the Snowflake route functions, run on the DuckDB KB after sqlglot transpiles it:
    the Cortex call becomes the hash embed() the KB was built with (and its label), the function
    arguments become literals, and VECTOR_COSINE_SIMILARITY is mapped to DuckDB's cosine similarity
    (sqlglot turns it into a cosine *distance*). Every database's rank, score and top table/column
    must equal those of the DuckDB route_shortlist macro."""
    import dbrouter

    body = _inline("with {{ dbrouter.route_shortlist_step(question='question', depth='shortlist_k') }} "
                   "select shortlist_rank, db_id, score, top_table, top_column from shortlist", sf["env"], sf["work"])
    tree = sqlglot.parse_one(body, read="snowflake")
    with dbrouter.connect(built_kb["warehouse"], embedder="hash") as con:
        _compare_shortlists(con, tree)


def _compare_shortlists(con, tree) -> None:
    for question in ("How many singers do we have?", "Which courses does the history department offer?",
                     "List the products that cost more than 100 dollars"):
        def arguments(node, question=question):
            if isinstance(node, exp.Column) and not node.table and node.name in ("question", "shortlist_k"):
                return exp.Literal.string(question) if node.name == "question" else exp.Literal.number(10)
            if isinstance(node, exp.Table) and (node.db or "").upper() == "KB":
                node.set("db", None)
            return node

        def to_duckdb_kb(node):
            if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous) \
                    and node.expression.name.lower() == "embed_text_768":
                return exp.Anonymous(this="embed", expressions=[node.expression.expressions[1]])
            if isinstance(node, exp.Literal) and node.is_string and node.this == "cortex:snowflake-arctic-embed-m-v1.5":
                return exp.Literal.string("hash")
            if isinstance(node, exp.CosineDistance):
                return exp.Anonymous(this="array_cosine_similarity", expressions=[node.this, node.expression])
            if isinstance(node, exp.TableFromRows) and isinstance(node.this, exp.Explode) \
                    and isinstance(node.this.this, exp.Kwarg):
                # Snowflake's table(flatten(input => x)) as w: the DuckDB form of macro flatten
                array = node.this.this.expression.sql("duckdb")
                return sqlglot.parse_one(f"select * from (select unnest({array}) as value) as {node.alias}",
                                         read="duckdb").args["from_"].this
            return node

        duck_sql = tree.copy().transform(arguments).transform(to_duckdb_kb).sql("duckdb")
        got = con.execute(duck_sql + " order by shortlist_rank").fetchall()
        expected = con.execute("select shortlist_rank, db_id, score, top_table, top_column "
                               "from route_shortlist(?, 100) order by 1", [question]).fetchall()
        assert len(got) == len(expected) == 10
        assert [(r, db, round(s, 6), t, c) for r, db, s, t, c in got] == expected, question


def test_stage_command_puts_the_udf_code_zip_on_the_stage(sf, tmp_path):
    """`python -m dbrouter.kb.snowflake stage` creates the stage and PUTs the code zip (fakesnow
    emulates internal stages): the staged file is byte for byte the zip built here."""
    import hashlib

    from dbrouter.kb.snowflake import build_code_zip

    proc = subprocess.run([sys.executable, "-m", "dbrouter.kb.snowflake", "stage", "--embedder", "hash"],
                          capture_output=True, text=True, env={**os.environ, **sf["env"]})
    assert proc.returncode == 0, proc.stderr
    assert sf["server"]["password"] not in proc.stdout + proc.stderr
    listed = sf["conn"].cursor().execute("list @dbrouter_stage").fetchall()
    local = build_code_zip(tmp_path).read_bytes()
    assert [(name, size, md5) for name, size, md5, _ in listed] == [
        ("dbrouter_stage/dbrouter_udfs.zip", len(local), hashlib.md5(local).hexdigest())]


def test_snowflake_creates_the_declared_entry_points_with_the_same_parameters_and_columns(sf):
    """Both dialects read one declaration (macro sql_entry_points); the DuckDB side is checked in
    test_sql_entry_points.py, so equal here means equal there."""
    import json

    declared = json.loads(_inline("{{ tojson(dbrouter.sql_entry_points()) }}", sf["env"], sf["work"]))
    ddl = _inline("{{ dbrouter.default__create_route_functions() }}\n{{ dbrouter.default__create_retrieval_functions() }}",
                  sf["env"], sf["work"])
    created = {}
    for statement in re.findall(r"create or replace function (.*?)\nlanguage sql", ddl, re.S):
        name, params, returns = re.match(r"\w+\.(\w+)\((.*?)\)\nreturns (.*)", statement, re.S).groups()
        columns = re.match(r"table \((.*)\)", returns)
        created[name] = ([p.split()[0] for p in params.split(", ") if p],
                         [c.split()[0] for c in columns[1].split(", ")] if columns else returns.strip())
    assert set(created) == {e["name"] for e in declared}
    types = {"json": "variant", "integer": "integer", "double": "double", "varchar": "varchar", "boolean": "boolean"}
    for e in declared:
        params, returns = created[e["name"]]
        assert params == [p[0] for p in e["params"]], e["name"]
        if e["kind"] == "table":
            assert returns == [c[0] for c in e["returns"]], e["name"]
        else:
            assert returns == types[e["returns"]], e["name"]


# The dispatched expressions' Snowflake variants, run on fakesnow: each the same value as its
# DuckDB fixture in tests/integration_tests (expected_<name>.csv). Inputs are Snowflake SQL.
SNOWFLAKE_EXPRESSIONS = {
    "is_blank": ("dbrouter.is_blank(\"'  '\")", True),
    "is_blank_text": ("dbrouter.is_blank(\"' x '\")", False),
    "is_nan": ("dbrouter.is_nan(\"'NaN'::float\")", True),
    "question_key": ("dbrouter.question_key(\"'How many  singers?'\")", "how many singers"),
    "json_get": ("dbrouter.json_get(\"'{\\\"name\\\": \\\"a b\\\"}'\", 'name')", "a b"),
    "json_at": ("dbrouter.json_at(\"parse_json('[{\\\"evidence\\\": {\\\"abstain\\\": true}}]')\", [0, 'evidence', 'abstain'])",
                "true"),
    "array_size": ("dbrouter.array_size(dbrouter.array_literal([\"'a'\", \"'b'\"]))", 2),
    "list_has_any": ("dbrouter.list_has_any(dbrouter.array_literal([\"'x'\", \"'y'\"]), dbrouter.array_literal([\"'y'\"]))",
                     True),
    "list_has_all": ("dbrouter.list_has_all(dbrouter.array_literal([\"'x'\", \"'y'\"]), "
                     "dbrouter.array_literal([\"'x'\", \"'z'\"]))", False),
    "regexp_replace_all": ("dbrouter.regexp_replace_all(\"'a1b22c'\", '[0-9]+', '#')", "a#b#c"),
    "type_family": ("dbrouter.type_family(\"'decimal(10,2)'\")", "number"),
}
# Statements with a FROM (aggregates, FROM-clause macros): (the statement, its first value).
SNOWFLAKE_STATEMENTS = {
    "string_agg_ordered": ("select {{ dbrouter.string_agg_ordered('v', \"'|'\", 'k') }} "
                           "from (values ('y', 2), ('x', 1)) as t(v, k)", "x|y"),
    "string_agg_ordered_null": ("select {{ dbrouter.string_agg_ordered('v', \"'|'\", 'k') }} "
                                "from (values (null, 1)) as t(v, k)", None),
    "float_agg": ("select {{ dbrouter.float_agg('sum', 'v') }} from (values (0.5, 2), (0.25, 1)) as t(v, k)", 0.75),
    "bool_or_agg": ("select {{ dbrouter.bool_or_agg('b') }} from (values (true), (false)) as t(b)", True),
    "quantile_cont": ("select {{ dbrouter.quantile_cont('x', 0.1) }} "
                      "from (values (1.0), (2.0), (3.0), (4.0), (5.0)) as t(x)", 1.4),
    "json_array_agg": ("select {{ dbrouter.json_array_agg('v', 'v desc') }} from (values ('x'), ('y')) as t(v)",
                       '["y","x"]'),
    "flatten": ("select count(*) from (select {{ dbrouter.array_literal([\"'a'\", \"'b'\"]) }} as arr) as t, "
                "{{ dbrouter.flatten('t.arr', 'f') }}", 2),
    "rows_of_databases": ("select count(*) from ({{ dbrouter.rows_of_databases(\"(select 'a' as db_id, 1 as x "
                          "union all select 'b', 2 union all select 'a', 3)\", \"select 'a' as db_id\", 'r.x > 1') }}) as t",
                          1),
    "json_array_rows": ("select max(r.b) from {{ dbrouter.json_array_rows(\"'[{\\\"a\\\": \\\"x\\\", "
                        "\\\"b\\\": \\\"1\\\"}, {\\\"a\\\": \\\"y\\\"}]'\", ['a', 'b'], 'r') }}", "1"),
}
# Not here: word_jaccard (fakesnow has no ARRAY_SIZE of what ARRAY_INTERSECTION returns: "no function
# matches array_length(JSON)"; its Snowflake SQL is parsed by the compile tests above).


def test_dispatched_expressions_give_on_snowflake_what_they_give_on_duckdb(sf):
    """The Snowflake variant of each cross-database expression, compiled for the Snowflake target
    (one dbt compile) and run on fakesnow one by one, gives the value its DuckDB fixture expects."""
    cases = {**{n: (f"select {{{{ {e} }}}} as {n}", want) for n, (e, want) in SNOWFLAKE_EXPRESSIONS.items()},
             **SNOWFLAKE_STATEMENTS}
    names = list(cases)
    compiled = _inline("\n--next\n".join(cases[n][0] for n in names), sf["env"], sf["work"]).split("--next")
    assert len(compiled) == len(names)
    wrong = {}
    for name, sql in zip(names, compiled):
        want = cases[name][1]
        try:
            value = sf["conn"].cursor().execute(sql.strip()).fetchone()[0]
        except Exception as exc:  # noqa: BLE001 - fakesnow's own error types
            wrong[name] = f"{sql.strip()} -> {type(exc).__name__}: {str(exc)[:160]}"
            continue
        if isinstance(want, float):
            same = value is not None and abs(float(value) - want) < 1e-9
        elif isinstance(want, str) and want.startswith("["):  # JSON text: compared as JSON
            same = json.loads(value) == json.loads(want)
        else:
            same = value == want or (want is not None and str(value).lower() == str(want).lower())
        if not same:
            wrong[name] = f"{sql.strip()} -> {value!r}, want {want!r}"
    assert wrong == {}, "\n".join(f"{k}: {v}" for k, v in wrong.items())
