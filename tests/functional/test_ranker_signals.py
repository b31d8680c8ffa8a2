"""The learned ranker in SQL: its signals agree with their definitions, every number of the order
is in the evidence, a few examples never make routing worse, and abstention returns NULL with a
reason (demo KB, hash embedder)."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from dbrouter.routing import ranker
from dbrouter.tune import fitting
from tests.conftest import copy_demo, copy_project, run_cli

pytestmark = pytest.mark.slow


def _examples(built_kb) -> list[tuple[str, str]]:
    lines = (built_kb["base"] / "examples.jsonl").read_text().splitlines()
    return [(o["db_id"], o["question"]) for o in map(json.loads, lines) if o]


@pytest.fixture(scope="module")
def trusting_con(built_kb, tmp_path_factory):
    """The demo KB built with dbrouter__trust_examples: true (the hash embedder's leave-one-out test
    does not trust the demo's three examples per database, which zeroes the example signals) and
    dbrouter__abstain_in_repository: 0.05 (its 30 example questions then calibrate a floor: 0.02
    needs 50)."""
    import dbrouter

    tmp = tmp_path_factory.mktemp("trusting")
    project = copy_project(tmp / "project")
    yml = project / "dbt_project.yml"
    text = yml.read_text()
    for var, value in (("dbrouter__trust_examples", "true"), ("dbrouter__abstain_in_repository", "0.05")):
        text, count = re.subn(rf"^  {var}: .*$", f"  {var}: {value}", text, flags=re.M)
        assert count == 1, var
    yml.write_text(text)
    con = dbrouter.connect(_build(tmp, "kb", None, project), embedder="hash")
    assert con.execute("select examples_trusted, static_examples_trusted from kb_routing_calibration").fetchone() == (1, 1)
    yield con
    con.close()


def test_lex_example_signal_matches_its_python_definition(trusting_con, built_kb):
    kb_con = trusting_con
    n = kb_con.execute("select count(*) from kb_databases").fetchone()[0]
    for question in ("How many singers do we have?", "Which courses are taught on days MTW by the history department?",
                     "headphones under 100 dollars in stock"):
        want = fitting.example_word_share(question, _examples(built_kb), n)
        rows = kb_con.execute("select db_id, evidence from route_query_ranked(?, 10)", [question]).fetchall()
        got = {d: json.loads(e)["signals"] for d, e in rows if json.loads(e)["signals"]}
        assert got, question
        for db_id, signals in got.items():
            assert signals["lex_example"] == pytest.approx(want.get(db_id, 0.0), abs=1e-4), (question, db_id)
            assert signals["has_examples"] == (1 if db_id in want else 0)


def test_rank_score_is_the_weighted_sum_of_the_signals_and_orders_the_candidates(kb_con):
    weights = json.loads(kb_con.execute("select cast(route_ranker_weights() as varchar)").fetchone()[0])
    rows = kb_con.execute("select rank, evidence from route_query_ranked(?, 10)",
                          ["Which orchestra has the most performances?"]).fetchall()
    scores = []
    for _, e in sorted(rows):
        ev = json.loads(e)
        if ev["stage"] != "reranked":
            continue
        total = sum(part for *_, part in ranker.contributions(ev["signals"], weights))
        assert total == pytest.approx(ev["rank_score"], abs=2e-3)
        scores.append(ev["rank_score"])
    assert scores == sorted(scores, reverse=True) and len(scores) > 1


def _build(tmp_path, name, examples: list[str] | None, project=None) -> tuple:
    base = tmp_path / name
    sources = copy_demo(base)
    if examples is not None:
        (base / "examples.jsonl").write_text("".join(line + "\n" for line in examples))
    env = {"DBROUTER_PROJECT_DIR": str(project)} if project else None
    run_cli("build", "--sources", str(sources), "--warehouse", str(base / "kb.duckdb"), env=env)
    return base / "kb.duckdb"


def _r_at_1(warehouse, questions) -> float:
    import dbrouter

    con = dbrouter.connect(warehouse, embedder="hash")
    try:
        return sum(con.execute("select route_query(?)", [q]).fetchone()[0] == db for db, q in questions) / len(questions)
    finally:
        con.close()


def _rankings(warehouse, questions) -> list:
    """Each question's (db_id, rounded rank_score, signals) in ranked order."""
    import dbrouter

    con = dbrouter.connect(warehouse, embedder="hash")
    try:
        out = []
        for q in questions:
            rows = con.execute("select db_id, evidence from route_query_ranked(?, 10)", [q]).fetchall()
            out.append([(d, round(json.loads(e)["rank_score"], 6), json.loads(e)["signals"]) for d, e in rows])
        return out
    finally:
        con.close()


def test_a_few_examples_for_two_databases_do_not_make_routing_worse(tmp_path):
    """The new user's case: 6 examples for 2 of 10 databases. The calibration must not trust them
    (examples_trusted = 0: the first ranking and the ranker's example signals ignore them), so every
    question - of the two databases with examples too - ranks exactly as with no examples at all."""
    from dbrouter.kb.connect import connect

    src = copy_demo(tmp_path / "src").parent
    lines = [line for line in (src / "examples.jsonl").read_text().splitlines() if line.strip()]
    chosen = {"singer", "college_3"}
    few = [line for line in lines if json.loads(line)["db_id"] in chosen]
    others = [(o["db_id"], o["question"]) for o in map(json.loads, lines) if o["db_id"] not in chosen]
    assert len(few) == 6 and len(others) == 24
    with_few = _build(tmp_path, "few", few)
    without = _build(tmp_path, "none", [])
    con = connect(with_few, embedder="hash")
    try:
        assert con.execute("select examples_trusted from kb_routing_calibration").fetchone()[0] == 0
        # six examples cannot estimate the cascade's quantiles: its similarity stages stay off rather
        # than follow them (one junk example among six had opened the expanded stage to -0.044)
        assert con.execute("select normalized_threshold, main_clause_threshold, expanded_threshold, "
                           "static_expanded_threshold from kb_example_thresholds").fetchone() == (1.0, 1.0, 1.0, 1.0)
        question = json.loads(few[0])["question"]
        assert [r[0] for r in con.execute("select stage from retrieve_examples(?, null, 3)", [question]).fetchall()] \
            == ["exact"]
    finally:
        con.close()
    assert _r_at_1(with_few, others) >= _r_at_1(without, others)
    everything = [q for _, q in others] + [json.loads(line)["question"] for line in few]
    assert _rankings(with_few, everything) == _rankings(without, everything)
    shutil.rmtree(src)


def test_without_offtopic_probes_the_ranker_threshold_var_decides_with_a_reason(tmp_path):
    """A KB without example questions and with an empty probe seed has no floor of its own: the ranker
    threshold var applies (here one no question reaches), after the vocabulary test."""
    project = copy_project(tmp_path / "project")
    yml = project / "dbt_project.yml"
    text, count = re.subn(r"^vars:\n", "vars:\n  dbrouter__abstain_below: 1000000\n", yml.read_text(), flags=re.M)
    assert count == 1
    yml.write_text(text)
    (project / "seeds" / "offtopic_probes.csv").write_text("probe_id,kind,question\n")
    warehouse = _build(tmp_path, "abstain", [], project)
    import dbrouter

    con = dbrouter.connect(warehouse, embedder="hash")
    try:
        assert con.execute("select route_query('What is the weather in Paris tomorrow?')").fetchone()[0] is None
        out = json.loads(con.execute("select route_query_json('How many singers are there?')").fetchone()[0])
        assert out["abstained"] is True and out["reason"].startswith("no database matches confidently")
        assert out["ranking"], "the candidates it weighed are still listed"
        assert out["ranking"][0]["evidence"]["abstain_test"] == "ranker"
        assert float(con.execute("select route_abstain_below()").fetchone()[0]) == 1000000
        assert con.execute("select abstain_floor, static_abstain_floor, offtopic_floor, static_offtopic_floor, "
                           "n_offtopic_probes from kb_routing_calibration").fetchone() == (None, None, None, None, 0)
        assert "dbrouter__abstain_below" in out["reason"]
    finally:
        con.close()
    proc = run_cli("route", "--warehouse", str(warehouse), "--k", "2", "How many singers are there?",
                   env={"DBROUTER_PROJECT_DIR": str(project)})
    assert "no answer: no database matches confidently" in proc.stdout


OFF_TOPIC = ["What is the weather in Paris tomorrow?", "asdf qwerty", "Who won the football world cup in 1998?",
             "Recommend a good pasta recipe"]


@pytest.mark.parametrize("path", ["udf", "sql"])
def test_abstention_is_calibrated_from_the_kb_on_both_paths(trusting_con, path):
    """Before: one threshold fitted on benchmark train splits, on the ranker score, which the pure-SQL
    path (another vector space) never went below: it routed 'asdf qwerty' to a database."""
    con = trusting_con
    prefix = "static_" if path == "sql" else ""
    floor, n_probes, in_refused = con.execute(
        f"select {prefix}abstain_floor, {prefix}n_probes, {prefix}probes_in_refused from kb_routing_calibration"
    ).fetchone()
    assert floor is not None and n_probes == 30 and in_refused <= 2 / 30 + 1e-9  # the 5% quantile of 30
    refused = 0
    for question in OFF_TOPIC:
        out = json.loads(con.execute(f"select route_query_json_{path}(?)", [question]).fetchone()[0])
        answer = con.execute(f"select route_query_{path}(?)", [question]).fetchone()[0]
        assert (answer is None) == out["abstained"] and out["ranking"]
        if out["abstained"]:
            test = out["ranking"][0]["evidence"]["abstain_test"]
            assert test in ("vocabulary", "example_floor")  # the examples' floor, not the probes', decides
            assert ("this knowledge base's floor" if test == "example_floor" else "vocabulary") in out["reason"]
            refused += 1
    assert refused >= 3, refused  # before, the pure-SQL path refused none of them
    examples = con.execute("select question, db_id from kb_examples").fetchall()
    answered = [con.execute(f"select route_query_{path}(?)", [q]).fetchone()[0] == db for q, db in examples]
    assert all(answered)  # a stored example question is never refused and goes to its database
