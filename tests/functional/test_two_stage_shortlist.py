"""The two-stage shortlist (route_shortlist_step) against an exact one-stage scan written here in
numpy over the same vectors, on both ways the UDF path computes cosines (the vector index's
matrix and a SQL scan): every database's score is the fused score of its database, top-3
table, top-3 column and best example similarities, and the ranking is the reciprocal-rank fusion
of that dense score's order with the lexical channel's (BM25 over each table's distinct content
words, written here from kb_columns and kb_tables with the Python tokeniser). On the demo KB (10
databases, hash embedder) the default first stage (50) holds every database, so the ranking must
be the exact one; a copy whose functions are rebuilt with dbrouter__first_stage_k = 2 must score
its two stage-1 databases exactly, order them first, and order the rest by stage 1's fusion
(column similarity taken to be the table similarity)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from dbrouter.kb.connect import connect
from dbrouter.kb.dbt_runner import project_dir, run_dbt
from python_udfs.phrases import content_words
from tests.profiling import scanned_rows, table_scans

QUESTIONS = [
    "How many singers do we have?",
    "Which flights leave from Aberdeen?",
    "average salary of employees hired after 2010",
    "list the courses taught by each teacher",
    "what is the total revenue of orders shipped last month",
]


def _vars() -> dict:
    return yaml.safe_load((project_dir() / "dbt_project.yml").read_text())["vars"]


def exact_scores(con, question: str) -> tuple[dict[str, float], dict[str, float]]:
    """(one-stage score, stage-1 score) per database, from the KB's vectors in numpy."""
    v = np.asarray(con.execute("select embed(?)", [question]).fetchall()[0][0], dtype=np.float64)
    rows = con.execute("select db_id, doc_kind, embedding from kb_document_embeddings "
                       "where embedding_model = dbrouter_embedder() "
                       "and doc_kind in ('database', 'table', 'column', 'example')").fetchall()
    gap, trusted = con.execute("select coalesce(example_gap, 0), coalesce(examples_trusted, 0) "
                               "from kb_routing_calibration").fetchall()[0]
    sims: dict[str, dict[str, list[float]]] = {}
    for db, kind, emb in rows:
        e = np.asarray(emb, dtype=np.float64)
        sims.setdefault(db, {}).setdefault(kind, []).append(float(e @ v / (np.linalg.norm(e) * np.linalg.norm(v))))
    var = _vars()
    w_db, w_tab, w_col, w_ex = (float(var[f"dbrouter__weight_{k}"]) for k in ("database", "table", "column", "example"))

    def top(values: list[float] | None, n: int) -> float | None:
        return float(np.mean(sorted(values, reverse=True)[:n])) if values else None

    def fused(s_db, s_tab, s_col, s_ex) -> float:
        schema = (w_db * (s_db or 0) + w_tab * (s_tab or 0) + w_col * (s_col or 0)) / (w_db + w_tab + w_col)
        return (schema + w_ex * trusted * (s_ex if s_ex is not None else schema + gap)) / (1 + w_ex * trusted)

    one, first = {}, {}
    for db, kinds in sims.items():
        s_db = max(kinds["database"]) if "database" in kinds else None
        s_tab = top(kinds.get("table"), int(var["dbrouter__top_tables"]))
        s_col = top(kinds.get("column"), int(var["dbrouter__top_columns"]))
        s_ex = max(kinds["example"]) if "example" in kinds else None
        one[db], first[db] = fused(s_db, s_tab, s_col, s_ex), fused(s_db, s_tab, s_tab, s_ex)
    return one, first


def ordered(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda d: (-round(scores[d], 9), d))


def lexical_ranks(con, question: str) -> dict[str, int]:
    """Each database's rank by its best table's BM25 score (tf = 1 over the table's distinct content
    words), from the catalog; a database with no word of the question is not ranked."""
    terms: dict[tuple[str, str], set[str]] = {}
    for db, table, label, name, description in con.execute(
            "select db_id, table_name, column_label, column_name, column_description from kb_columns").fetchall():
        terms.setdefault((db, table), set()).update(content_words(label or name), content_words(description))
    for db, table, label, description in con.execute(
            "select db_id, table_name, table_label, table_description from kb_tables").fetchall():
        terms.setdefault((db, table), set()).update(
            content_words(f"{db} {table} {label or ''}" + (f" {description}" if description else "")))
    var = _vars()
    k1, b = float(var["dbrouter__lexical_k1"]), float(var["dbrouter__lexical_b"])
    n, avg = len(terms), sum(len(t) for t in terms.values()) / len(terms)
    df: dict[str, int] = {}
    for t in terms.values():
        for w in t:
            df[w] = df.get(w, 0) + 1
    best: dict[str, float] = {}
    for (db, _), t in terms.items():
        score = sum(math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) * (k1 + 1) / (1 + k1 * (1 - b + b * len(t) / avg))
                    for w in set(content_words(question)) & t)
        if score > 0:
            best[db] = max(best.get(db, 0.0), score)
    return {db: i for i, db in enumerate(ordered(best), 1)}


def fused_order(dense: dict[str, float], lexical: dict[str, int], among: list[str] | None = None) -> list[str]:
    """``among`` (default: every database) by reciprocal-rank fusion of the dense order and ``lexical``."""
    k = float(_vars()["dbrouter__lexical_rrf_k"])
    dense_rank = {db: i for i, db in enumerate(ordered(dense), 1)}
    rrf = {db: 1 / (k + dense_rank[db]) + (1 / (k + lexical[db]) if db in lexical else 0) for db in dense}
    return sorted(among or list(dense), key=lambda d: (-round(rrf[d], 12), -round(dense[d], 9), d))


@pytest.fixture(scope="module", params=["vector index", "scan"])
def narrow_kb(built_kb, tmp_path_factory, request) -> Path:
    """A copy of the demo KB whose route functions read the columns of stage 1's top 2 only, their
    UDF path's cosines from the numpy matrix (the default) or from a SQL scan."""
    copy = tmp_path_factory.mktemp("two_stage") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], copy)
    index = "true" if request.param == "vector index" else "false"
    run_dbt(["run", "--select", "kb_sql_functions", "--vars",
             f"{{dbrouter__first_stage_k: 2, dbrouter__vector_index: {index}}}"], copy, embedder="hash", quiet=True)
    return copy


@pytest.mark.parametrize("question", QUESTIONS)
def test_default_first_stage_gives_the_exact_ranking(kb_con, question):
    one, _ = exact_scores(kb_con, question)
    assert len(one) == 10
    lexical = lexical_ranks(kb_con, question)
    assert lexical or question != QUESTIONS[0]  # singers are in two demo databases; flights in none
    rows = kb_con.execute("select db_id, score, first_stage_rank, lexical_rank from route_shortlist(?, 3)",
                          [question]).fetchall()
    assert [r[0] for r in rows] == fused_order(one, lexical)[:3]
    assert {r[0]: r[3] for r in rows} == {r[0]: lexical.get(r[0]) for r in rows}
    for db, score, *_ in rows:
        assert score == pytest.approx(one[db], abs=2e-6)


def test_narrow_first_stage_scores_its_candidates_exactly(narrow_kb):
    con = connect(narrow_kb, embedder="hash")
    try:
        for question in QUESTIONS:
            one, first = exact_scores(con, question)
            lexical = lexical_ranks(con, question)
            stage1 = fused_order(first, lexical)
            # re-rank depth 1: the column depth is first_stage_k (2); every database is returned.
            # The shortlist orders stage 2's databases by the fusion of their own dense order
            rows = con.execute("select db_id, shortlist_score, evidence from route_query_ranked(?, 10, 1) "
                               "order by shortlist_rank", [question]).fetchall()
            stage2 = {db: one[db] if db in stage1[:2] else first[db] for db in one}
            want = fused_order(stage2, lexical, stage1[:2]) + fused_order(stage2, lexical, stage1[2:])
            assert [r[0] for r in rows] == want, question
            for db, score, evidence in rows:
                in_stage2 = db in stage1[:2]
                assert score == pytest.approx(one[db] if in_stage2 else first[db], abs=2e-6), (question, db)
                assert (json.loads(evidence)["shortlist"]["column_similarity"] is None) == (not in_stage2)
            # the re-rank depth (10) exceeds first_stage_k here, so the columns of its whole
            # depth are read and the routed ranking is the one-stage one
            ranked = [r[0] for r in con.execute("select db_id from route_query_ranked(?, 10) order by rank",
                                                [question]).fetchall()]
            assert sorted(ranked[:10]) == sorted(fused_order(one, lexical)[:10])
    finally:
        con.close()


def test_narrow_first_stage_on_the_pure_sql_path(narrow_kb):
    con = connect(narrow_kb, embedder="hash")
    try:
        for question in QUESTIONS:
            rows = con.execute("select evidence from route_query_ranked_sql(?, 10, 1) order by shortlist_rank",
                               [question]).fetchall()
            scored = [json.loads(r[0])["shortlist"]["column_similarity"] is not None for r in rows]
            assert len(rows) == 10 and scored == [True, True] + [False] * 8, question
    finally:
        con.close()


@pytest.fixture(scope="module")
def many_kb(tmp_path_factory) -> Path:
    """A KB of 200 synthetic databases (the demo's college_3 schema renamed, as `eval scale` makes
    them; hash embedder, ~25 s): enough rows that DuckDB's plan of the pure-SQL path's rowid fetch
    depends on its estimates, which the demo's 10 databases never exercise."""
    from dbrouter.eval.kb import build_kb
    from dbrouter.eval.scale import synthesize, write_repository

    base = tmp_path_factory.mktemp("many")
    college = json.loads((Path(__file__).parents[2] / "demo" / "schemas" / "college_3.json").read_text())
    schemas = [college, {**college, "db_id": "college_3b"}, {**college, "db_id": "college_3c"}]
    write_repository(synthesize(schemas, 200), base / "databases.jsonl")
    build_kb(base / "databases.jsonl", [], base / "kb.duckdb", "hash", lambda _message: None)
    return base / "kb.duckdb"


def test_the_pure_sql_path_fetches_only_the_candidates_rows(many_kb, tmp_path):
    """Stage 2's column vectors (stage 1's top 50 databases) and the re-rank's column phrases (the
    top 10) are fetched by rowid: each wide scan passes on at most those databases' rows. With the
    candidates' db_id joined to the table to find the rowids, DuckDB estimated the picked rows
    above the table's own count and built its hash table on the whole table, reading every vector
    (here 15,210 phrases for 780; at 10,000 databases 517k phrases, 147 ms of a 466 ms question);
    the db_id test is a semi join now, whose estimate stays below the table's."""
    con = connect(many_kb, embedder="hash")
    try:
        def largest(sql: str, n: int) -> int:  # the rows of the n databases with the most: a bound
            return sum(r[0] for r in con.execute(f"{sql} group by db_id order by 1 desc limit {n}").fetchall())

        phrases = largest("select count(*) from kb_column_phrases", 10)
        columns = largest("select count(*) from kb_static_document_embeddings where route_stage = 2", 50)
        every = con.execute("select count(*) from kb_column_phrases").fetchall()[0][0]
        assert phrases * 10 < every
        profile = tmp_path / "profile.json"
        phrase_scans = scanned_rows(con, "select route_query_sql(?)", [QUESTIONS[0]], "kb_column_phrases", profile)
        column_scans = table_scans(profile, "kb_static_document_embeddings")
        # a narrow scan (db_id and the condition's columns) finds the rowids, then the fetch
        assert min(phrase_scans) <= phrases, phrase_scans
        assert min(column_scans) <= columns, column_scans
    finally:
        con.close()


def test_the_udf_path_reads_the_vector_index_only_when_asked(narrow_kb, request):
    con = connect(narrow_kb, embedder="hash")
    try:
        body = " ".join(str(r[0]) for r in con.execute(
            "select macro_definition from duckdb_functions() where function_name in "
            "('route_shortlist_udf', 'route_shortlist_sql')").fetchall())
        udf_body = " ".join(str(r[0]) for r in con.execute(
            "select macro_definition from duckdb_functions() where function_name = 'route_shortlist_udf'").fetchall())
    finally:
        con.close()
    uses_index = "dbrouter_document_hits" in udf_body
    assert uses_index == ("vector index" in request.node.callspec.id)
    assert body.count("dbrouter_document_hits") == udf_body.count("dbrouter_document_hits")  # never the SQL path


def test_a_script_that_never_closes_its_connection_leaks_nothing(built_kb):
    """The vector index's UDF lives in the connection and reads through it: held strongly, that
    reference cycle kept the connection alive to the end and nanobind reported leaks at exit."""
    script = ("import sys, dbrouter\n"
              "con = dbrouter.connect(sys.argv[1], embedder='hash')\n"
              "print(con.execute('select route_query_udf(?)', ['How many singers do we have?']).fetchall())\n")
    proc = subprocess.run([sys.executable, "-c", script, str(built_kb["warehouse"])], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "singer" in proc.stdout
    assert "leaked" not in proc.stderr


@pytest.fixture(scope="module")
def scan_kb(built_kb, tmp_path_factory) -> Path:
    """A copy of the demo KB whose UDF path reads no index: its cosines and the re-rank's span
    mapping come from SQL scans and joins."""
    copy = tmp_path_factory.mktemp("scan") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], copy)
    run_dbt(["run", "--select", "kb_sql_functions", "--vars", "{dbrouter__vector_index: false}"], copy,
            embedder="hash", quiet=True)
    return copy


def test_the_phrase_index_maps_the_question_as_the_join_does(kb_con, scan_kb):
    """The re-rank's span mapping from dbrouter_phrase_mappings (the default) and from the join of every
    candidate column with every span: the same phrase mappings, signals and ranking."""
    body = kb_con.execute("select macro_definition from duckdb_functions() "
                          "where function_name = 'route_query_ranked_udf'").fetchall()
    assert "dbrouter_phrase_mappings" in str(body)
    scan = connect(scan_kb, embedder="hash")
    try:
        assert "dbrouter_phrase_mappings" not in str(scan.execute(
            "select macro_definition from duckdb_functions() where function_name = 'route_query_ranked_udf'").fetchall())
        compared = 0
        for question in QUESTIONS:
            sql = "select db_id, score, evidence from route_query_ranked_udf(?, 10) order by rank"
            got, want = kb_con.execute(sql, [question]).fetchall(), scan.execute(sql, [question]).fetchall()
            assert [r[0] for r in got] == [r[0] for r in want], question
            for (_, g_score, g_ev), (_, w_score, w_ev) in zip(got, want, strict=True):
                assert g_score == pytest.approx(w_score, abs=1e-5)
                g, w = json.loads(g_ev), json.loads(w_ev)
                assert g.get("signals") == pytest.approx(w.get("signals"), abs=1e-4)
                keys = ("phrase", "span", "column", "match", "n_mappings")
                assert [tuple(m[k] for k in keys) for m in g.get("mappings") or []] \
                    == [tuple(m[k] for k in keys) for m in w.get("mappings") or []], question
                compared += len(g.get("mappings") or [])
        assert compared > 20  # the re-ranked candidates' mappings were compared, not empty lists
    finally:
        scan.close()


POSTED = [("kb_table_terms", "term", "table_name", "weight"), ("kb_vocabulary", "term", None, None),
          ("kb_route_tokens", "token", "source", None)]


@pytest.mark.parametrize(("relation", "term", "text", "number"), POSTED)
def test_the_term_postings_are_the_rows_a_scan_keeps(kb_con, relation, term, text, number):
    """dbrouter_term_postings returns exactly the table's rows of the words asked (of the databases
    asked, when some are), doubles unrounded."""
    words = [r[0] for r in kb_con.execute(f"select distinct {term} from {relation} order by 1").fetchall()]
    assert len(words) > 50
    dbs = [r[0] for r in kb_con.execute(f"select distinct db_id from {relation} order by 1").fetchall()]
    assert len(dbs) > 3
    cols = f"db_id, {term}, {text or 'null'}, {number or 'null'}"
    asks = [words[:1], words[::7], words[-5:] + ["no such word", words[0]], [], ["no such word"]]
    for ask in asks:
        for among in (None, dbs[::2] + ["no such database"], [], dbs):
            got = kb_con.execute("select u.p.db_id, u.p.term, u.p.text, u.p.number from (select unnest("
                                 "dbrouter_term_postings(?, ?, ?, ?, ?, ?)) as p) as u",
                                 [relation, term, text, number, ask, among]).fetchall()
            want = kb_con.execute(f"select {cols} from {relation} where list_contains(?, {term}) "
                                  "and (? is null or list_contains(?, db_id))", [ask, among, among]).fetchall()
            assert sorted(got, key=repr) == sorted(want, key=repr), (relation, ask[:3], among)
            assert len(got) > 0 or not set(ask) & set(words) or among not in (None, dbs)
            if among == dbs[::2] + ["no such database"] and len(ask) > 5:
                assert 0 < len(got) < len(kb_con.execute(f"select 1 from {relation} where list_contains(?, {term})",
                                                         [ask]).fetchall())  # the databases cut something


def test_the_best_text_sums_are_the_sql_sums_and_ranks(kb_con):
    """dbrouter_best_text_sums gives each database's best table for the words asked as the pure-SQL
    lexical channel computes it from the scan (sum of the weights, then the best per database, ties
    to the larger name), to the last bit; kb_table_terms' weights are multiples of 2^-32."""
    assert kb_con.execute("select count(*) from kb_table_terms "
                          "where weight * 4294967296.0 != round(weight * 4294967296.0)").fetchall() == [(0,)]
    words = [r[0] for r in kb_con.execute("select distinct term from kb_table_terms order by 1").fetchall()]
    assert len(words) > 50
    for ask in [words[:1], words[::5], words[::3], words[-7:] + ["no such word", words[0]], [], words]:
        got = kb_con.execute("select u.b.db_id, u.b.total, u.b.text from (select unnest(dbrouter_best_text_sums("
                             "'main.kb_table_terms', 'term', 'table_name', 'weight', ?)) as b) as u order by 1",
                             [ask]).fetchall()
        want = kb_con.execute("select db_id, max(bm25), arg_max(table_name, (bm25, table_name)) from ("
                              "  select db_id, table_name, sum(weight) as bm25 from kb_table_terms "
                              "  where list_contains(?, term) group by db_id, table_name) group by db_id order by 1",
                              [ask]).fetchall()
        assert got == want, ask[:3]
        assert len(got) > 0 or not set(ask) & set(words)


@pytest.fixture(scope="module")
def postings_kb(built_kb, tmp_path_factory) -> Path:
    """A copy of the demo KB whose UDF path reads its three lexical tables by term from the UDF
    process however small they are (the demo's are below dbrouter__term_postings_min_rows)."""
    copy = tmp_path_factory.mktemp("postings") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], copy)
    run_dbt(["run", "--select", "kb_sql_functions", "--vars", "{dbrouter__term_postings_min_rows: 0}"], copy,
            embedder="hash", quiet=True)
    return copy


def _body(con, name: str) -> str:
    return str(con.execute("select macro_definition from duckdb_functions() where function_name = ?", [name]).fetchall())


def test_the_routes_read_from_postings_are_the_scans(kb_con, postings_kb):
    """The UDF path reading its lexical tables through dbrouter_term_postings answers exactly as the
    scans do (the demo's default: its tables are small), planned and held."""
    from dbrouter.kb import held

    assert "dbrouter_term_postings" not in _body(kb_con, "route_query_ranked_udf")  # below the bound: scanned
    con = connect(postings_kb, embedder="hash")
    try:
        # kb_vocabulary and kb_route_tokens by term; kb_table_terms summed per database there too
        assert _body(con, "route_query_ranked_udf").count("dbrouter_term_postings") == 2
        assert _body(con, "route_query_ranked_udf").count("dbrouter_best_text_sums") == 1
        assert "dbrouter_best_text_sums" not in _body(kb_con, "route_query_ranked_udf")
        assert "dbrouter_term_postings" not in _body(con, "route_query_ranked_sql")  # never the pure-SQL path
        for question in QUESTIONS + ["xyzzy plugh", "What is the average age of singers from France?"]:
            want = kb_con.execute("select route_query_json_udf(?, 10)", [question]).fetchall()[0][0]
            assert con.execute("select route_query_json_udf(?, 10)", [question]).fetchall()[0][0] == want, question
            sql = "select lexical_score, lexical_table, lexical_rank from route_shortlist_udf(?, 20) order by db_id"
            assert con.execute(sql, [question]).fetchall() == kb_con.execute(sql, [question]).fetchall()
        held.held_route_json(con, QUESTIONS[0], 10)  # the first call holds nothing
        for question in QUESTIONS:
            want = kb_con.execute("select route_query_json_udf(?, 10)", [question]).fetchall()[0][0]
            assert held.held_route_json(con, question, 10) == want, question
        tables = held._HOLDERS[con].tables
        assert "kb_databases" in tables  # held, but not the tables read by term (nor the join edges)
        assert not set(tables) & {"kb_table_terms", "kb_vocabulary", "kb_route_tokens", "kb_walk_edges"}
    finally:
        con.close()
