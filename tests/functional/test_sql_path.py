"""The pure-SQL route path (issue 11): a plain DuckDB client that registered nothing routes and
retrieves on a KB built by `dbrouter build`; its text functions and static question vectors
match the Python UDFs they replace; UDF connections get the UDF path, and either can be asked
for by name."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

from dbrouter.kb.connect import connect
from dbrouter.linking.columns import retrieve_columns
from python_udfs.embeddings import get_phrase_embedder
from python_udfs.examples import normalize_question
from python_udfs.phrases import content_words, question_spans
from python_udfs.text import canonicalize
from tests.conftest import ROOT, copy_demo, run_cli

# Punctuation, accents, numbers, dates, quotes, CJK, emoji, control characters, SQL-looking and
# huge input. Not here: U+0130 (capital I with dot), which Python lower-cases to 'i' + a
# combining dot and DuckDB to 'i' (test_known_lowercase_difference).
CORPUS = [
    "How many singers are there?", "List the names of all students enrolled in math!",
    "What's the average salary, in 2013-03-04?", "Show flights from Paris to Zürich on March 3, 1999",
    "Élan naïve café — “quoted” text 'x' and \"y\"", "cities matches singers status glasses boxes churches",
    "ids: 12, 3.5, -7, +8, 1,000 and 45% of 3rd place", "東京 population 2020年",
    "drop table x; -- select * from kb; ' or 1=1", "a", "", "   ", "\t\n",
    "show me the names of people born in 1990 and 2000", "Which employee_id has most sales by year 2001 to 2005?",
    "FIND OUT THE MAXIMUM AGE!!!", "x" * 3000, "word " * 700, "Tell me who is the oldest singer in September 2013 .",
    "1-2 3/4 5.6.7 8,9,10", "naïve résumé façade coöperate", "\x00null\x01byte", "emoji 😀 test 🚀 rockets",
    "snake_case_name and CamelCase", "Could you please list all the orchestras founded after 2001?",
]


def demo_questions() -> list[str]:
    """The demo's example questions (demo/examples.jsonl, three per database)."""
    with open(ROOT / "demo" / "examples.jsonl", encoding="utf-8") as fh:
        return [json.loads(line)["question"] for line in fh if line.strip()]


@pytest.fixture(scope="module")
def plain(built_kb, tmp_path_factory):
    """A plain duckdb connection (nothing registered) to a copy of the demo KB: a copy, because
    connections to one file in one process share the database, and other tests register UDFs."""
    import duckdb

    copy = tmp_path_factory.mktemp("plain") / "kb.duckdb"
    shutil.copyfile(built_kb["warehouse"], copy)
    con = duckdb.connect(str(copy), read_only=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def m2v_kb(tmp_path_factory):
    """The demo KB built with the static m2v embedder (the model loads offline from site-packages)."""
    base = tmp_path_factory.mktemp("kb_m2v")
    warehouse = base / "kb.duckdb"
    run_cli("build", "--sources", str(copy_demo(base)), "--warehouse", str(warehouse), env={"DBROUTER_EMBEDDER": "m2v"})
    return warehouse


PLAIN_CLIENT = r"""
import json, sys
import duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
udfs = con.execute("select count(*) from duckdb_functions() where function_name in ('embed', 'embed_phrase')").fetchall()[0][0]
q = "How many singers do we have?"
out = {
    "modules": sorted(m for m in sys.modules if m.startswith(("dbrouter", "python_udfs", "sentence_transformers", "model2vec"))),
    "udfs": udfs,
    "route_query": con.execute("select route_query(?)", [q]).fetchall()[0][0],
    "json": json.loads(con.execute("select route_query_json(?)", [q]).fetchall()[0][0]),
    "json_null": json.loads(con.execute("select route_query_json(NULL)").fetchall()[0][0]),
    "json_empty": json.loads(con.execute("select route_query_json('  ')").fetchall()[0][0]),
    "null": con.execute("select route_query(NULL), route_query('')").fetchall()[0],
    "ranked": con.execute("select rank, db_id from route_query_ranked(?, 3)", [q]).fetchall(),
    "statements": con.execute("select db_id, statement_text from retrieve_statements('Who are the rich singers?', NULL, 2)").fetchall(),
    "examples": con.execute("select stage, db_id from retrieve_examples(?, NULL)", [q]).fetchall(),
    "columns": con.execute("select table_name, column_name from retrieve_columns(?, 'concert_singer', 3)", [q]).fetchall(),
    "mapped": con.execute("select db_id, evidence from route_query_ranked_mapped(?, ?, 3)", [q, json.dumps(
        [{"db_id": "concert_singer", "phrase": "singers", "table_name": "singer", "column_name": "Name"}])]).fetchall(),
    "shortlist": con.execute("select db_id from route_shortlist(?, 2)", [q]).fetchall(),
    "phrases": con.execute("select distinct phrase from route_phrase_mappings(?, 2)", [q]).fetchall(),
}
print(json.dumps(out))
"""


def test_a_plain_duckdb_client_routes_and_retrieves(built_kb):
    proc = subprocess.run([sys.executable, "-c", PLAIN_CLIENT, str(built_kb["warehouse"])],
                          capture_output=True, text=True, cwd="/")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["modules"] == [] and out["udfs"] == 0  # nothing but duckdb, no UDF registered
    assert out["route_query"] in ("concert_singer", "singer")
    assert out["json"]["path"] == "sql" and out["json"]["reason"] is None
    assert out["json"]["ranking"][0]["db_id"] == out["route_query"]
    assert out["json_null"] == {"question": None, "path": "sql", "ranking": [], "reason": "question is NULL",
                                "abstained": False}
    assert out["json_empty"]["ranking"] == [] and out["json_empty"]["reason"] == "question is empty"
    assert out["null"] == [None, None]
    assert [r[0] for r in out["ranked"]] == [1, 2, 3] and out["ranked"][0][1] == out["route_query"]
    assert out["statements"] and "singer" in out["statements"][0][1]
    assert out["examples"] and out["examples"][0][0] in ("exact", "normalized", "main_clause", "expanded")
    assert len(out["columns"]) == 3
    assert out["mapped"] and out["mapped"][0][0] == "concert_singer"  # the LLM-mapping entry point
    assert json.loads(out["mapped"][0][1])["mappings"][0]["column"] == "singer.Name"
    assert len(out["shortlist"]) == 2 and out["phrases"] == [["singer"]]


@pytest.mark.parametrize("question", [None, "", "   ", "?!", "x" * 100_000, "'; drop table kb_databases; --"])
def test_bad_questions_give_null_and_a_reason_on_the_sql_path(plain, question):
    assert plain.execute("select route_query_sql(?)", [question]).fetchall()[0][0] is None or question not in (None, "", "   ")
    out = json.loads(plain.execute("select route_query_json_sql(?)", [question]).fetchall()[0][0])
    if not out["ranking"]:
        assert out["reason"]
    assert plain.execute("select count(*) from kb_databases").fetchall()[0][0] == 10


def test_udf_connections_get_the_udf_path_and_either_can_be_named(built_kb):
    q = "stadium capacity"
    con = connect(built_kb["warehouse"], embedder="hash")
    try:
        assert json.loads(con.execute("select route_query_json(?)", [q]).fetchall()[0][0])["path"] == "udf"
        assert con.execute("select route_query(?)", [q]).fetchall() == con.execute("select route_query_udf(?)", [q]).fetchall()
        assert json.loads(con.execute("select route_query_json_sql(?)", [q]).fetchall()[0][0])["path"] == "sql"
        udf_rows = con.execute("select * from retrieve_columns(?, 'concert_singer', 5)", [q]).fetchall()
        assert udf_rows == con.execute("select * from retrieve_columns_udf(?, 'concert_singer', 5)", [q]).fetchall()
    finally:
        con.close()
    con = connect(built_kb["warehouse"], embedder="hash", route_path="sql")
    try:
        assert json.loads(con.execute("select route_query_json(?)", [q]).fetchall()[0][0])["path"] == "sql"
    finally:
        con.close()


@pytest.mark.parametrize("route_path", ["udf", "sql"])
def test_without_plain_names_dbrouter_calls_the_connections_path(built_kb, route_path):
    """``plain_names=False`` (the CLI's connection) creates no temp macro, and dbrouter's functions
    still route and retrieve on the connection's own path, exactly as with the plain names."""
    import dbrouter

    questions = ["How many singers are there?", "Which courses does the history department offer?", "tell me a joke"]
    temp = "select count(*) from duckdb_functions() where database_name = 'temp' and function_name = 'route_query'"
    seen = {}
    for plain_names in (True, False):  # one at a time: one process registers a file's UDFs once
        con = connect(built_kb["warehouse"], embedder="hash", route_path=route_path, plain_names=plain_names)
        try:
            assert con.execute(temp).fetchall()[0][0] == int(plain_names)
            for q in questions:
                want = json.loads(con.execute(f"select route_query_json_{route_path}(?, 3)", [q]).fetchall()[0][0])
                assert want["path"] == route_path
                got = dbrouter.route(con, q, 3)
                assert [(c.db_id, c.score) for c in got.candidates] == [
                    (c["db_id"], c["score"]) for c in want["ranking"]]
                assert got.reason == want.get("reason")
                seen[plain_names, q] = (got.candidates, dbrouter.retrieve_examples(con, q, "singer"),
                                        dbrouter.retrieve_statements(con, q), retrieve_columns(con, q, "singer", k=5))
        finally:
            con.close()
    for q in questions:
        assert seen[True, q] == seen[False, q]


def test_sql_text_functions_match_the_python_udfs(plain):
    for q in CORPUS:
        assert plain.execute("select dbrouter_sql_content_words(?)", [q]).fetchall()[0][0] == content_words(q), q
        spans = {s: list(w) for s, w in plain.execute("select span, word_idx from dbrouter_sql_question_spans(?)",
                                                      [q]).fetchall()}
        assert spans == dict(question_spans(q, 3)), q
        assert plain.execute("select dbrouter_sql_canonicalize(?)", [q]).fetchall()[0][0] == canonicalize(q), q
        assert plain.execute("select dbrouter_sql_normalize_question(?)", [q]).fetchall()[0][0] == normalize_question(q), q
    assert plain.execute("select dbrouter_sql_content_words(NULL), dbrouter_sql_canonicalize(NULL), "
                         "dbrouter_sql_normalize_question(NULL), dbrouter_sql_embed(NULL)").fetchall()[0] == ([], None, None, None)


def test_known_lowercase_difference(plain):
    # Python: 'İ'.lower() == 'i̇' (two code points), so 'İstanbul' gives the tokens 'i' and 'stanbul'
    assert content_words("İstanbul") == ["stanbul"]
    assert plain.execute("select dbrouter_sql_content_words('İstanbul')").fetchall()[0][0] == ["istanbul"]


def _cosines(con, texts, embedder) -> list[float]:
    """Cosine of the SQL static vector to the Python phrase embedder's, per text; a text the model
    knows no piece of (Python: a zero vector) must have no SQL vector either, and is skipped."""
    model = get_phrase_embedder(embedder)
    out = []
    for text in texts:
        v = con.execute("select dbrouter_sql_embed(?)", [text]).fetchall()[0][0]
        p = model.encode([text])[0]
        if not np.any(p):
            assert v is None, text[:60]
            continue
        assert v is not None, text[:60]
        v = np.asarray(v, dtype=np.float64)
        out.append(float(v @ p / np.linalg.norm(v) / np.linalg.norm(p)))
    return out


def test_sql_static_vector_is_the_m2v_vector(m2v_kb):
    import duckdb

    con = duckdb.connect(str(m2v_kb), read_only=True)
    try:
        texts = [t for t in CORPUS if t.strip()] + demo_questions()
        cosines = _cosines(con, texts, "m2v")
        assert len(cosines) >= len(texts) - 1 and min(cosines) >= 0.999  # only "x" * 3000 is [UNK]
        for blank in ("", "   ", "\t\n", None):
            assert con.execute("select dbrouter_sql_embed(?)", [blank]).fetchall()[0][0] is None
    finally:
        con.close()


def test_the_intent_probe_reads_the_fitted_weights_from_the_kb(m2v_kb):
    """kb_intent_probes holds the fitted probes (macros/tuned/fitted_intent.sql) and the routing
    query joins the question vector's row: the evidence's intent score is cosine(v, w) * norm + bias."""
    text = (ROOT / "macros" / "tuned" / "fitted_intent.sql").read_text()
    probes = ast.literal_eval(text[text.index("return(") + len("return("):text.rindex(") }}")])
    con = connect(m2v_kb, embedder="m2v", plain_names=False)
    try:
        rows = dict(con.execute("select embedder, weights from kb_intent_probes").fetchall())
        assert set(rows) == {label for label, p in probes.items() if len(p["weights"]) == 384}
        for label, weights in rows.items():
            assert list(weights) == [float(np.float32(w)) for w in probes[label]["weights"]]
        p = probes["m2v"]
        w = np.asarray(p["weights"], dtype=np.float32)
        for q in ["How many singers are there?", "what is the meaning of life", "List all orchestras founded after 2001"]:
            out = json.loads(con.execute("select route_query_json_udf(?, 1)", [q]).fetchall()[0][0])
            score = out["ranking"][0]["evidence"]["intent_score"]
            v = np.asarray(con.execute("select embed(?)", [q]).fetchall()[0][0], dtype=np.float32)
            cosine = float(v @ w / (np.linalg.norm(v) * np.linalg.norm(w)))
            assert score == pytest.approx(cosine * p["norm"] + p["bias"], abs=1e-3), q
    finally:
        con.close()


def test_on_m2v_both_paths_map_phrases_alike(m2v_kb):
    """With the m2v embedder both paths' span vectors come from the same static model, so where
    both shortlists hold a database its phrase -> column mappings must agree (scores within float
    rounding: model2vec averages float16 rows, SQL sums them as floats): this checks the SQL
    content words, spans, span vectors and mapping end to end."""
    threshold = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]["dbrouter__phrase_threshold"]
    con = connect(m2v_kb, embedder="m2v")
    sql_ = "select db_id, word_index, phrase, table_name, column_name, similarity from route_phrase_mappings_{}(?, 10)"
    try:
        compared = 0
        for q in demo_questions():
            udf = {r[:5]: r[5] for r in con.execute(sql_.format("udf"), [q]).fetchall()}
            sql = {r[:5]: r[5] for r in con.execute(sql_.format("sql"), [q]).fetchall()}
            common = {k[0] for k in udf} & {k[0] for k in sql}
            assert common, q
            u = {k: v for k, v in udf.items() if k[0] in common}
            s = {k: v for k, v in sql.items() if k[0] in common}
            only_one = {k: (u | s)[k] for k in u.keys() ^ s.keys()}  # float rounding at the threshold
            assert all(abs(v - threshold) < 1e-3 for v in only_one.values()), (q, only_one)
            assert all(abs((u[k] or 0) - (s[k] or 0)) < 1e-3 for k in u.keys() & s.keys()), q
            compared += len(u)
        assert compared > 100
    finally:
        con.close()


def test_hash_sql_vector_is_exact_for_words_the_kb_holds(plain, built_kb):
    """The hash embedder's whole-word feature of a word absent from the KB cannot be computed in SQL
    (blake2b); for words the KB holds the vector is exact."""
    words = [r[0] for r in plain.execute("select piece from kb_static_pieces where piece not like '#%' "
                                         "and length(piece) > 3 order by piece limit 60").fetchall()]
    texts = [" ".join(words[i:i + 6]) for i in range(0, 60, 6)]
    assert min(_cosines(plain, texts, "hash")) >= 0.999


def test_hash_sql_path_agrees_with_the_udf_path_on_demo_questions(kb_con):
    questions = demo_questions()
    agree = sum(kb_con.execute("select route_query_udf(?) = route_query_sql(?)", [q, q]).fetchall()[0][0]
                for q in questions)
    assert agree == len(questions)


def test_route_path_must_be_udf_or_sql(built_kb, plain):
    import duckdb

    from dbrouter.errors import WarehouseError
    from dbrouter.kb.connect import use_route_path

    with pytest.raises(WarehouseError, match="unknown route path 'fast'"):
        connect(built_kb["warehouse"], embedder="hash", route_path="fast")
    with pytest.raises(duckdb.Error, match="path must be 'udf' or 'sql'"):
        plain.execute("select dbrouter_route_path_ddl('fast')").fetchall()
    use_route_path(plain, "sql")  # shadowing with the path the file already names is harmless
    assert json.loads(plain.execute("select route_query_json('stadium')").fetchall()[0][0])["path"] == "sql"
