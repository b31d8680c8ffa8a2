import json

import duckdb
import pytest

from dbrouter.errors import DbtRunError
from dbrouter.eval.kb import embedded_by_last_build
from dbrouter.kb.dbt_runner import target_path


def _run_results(warehouse, invocation_id: str, models=("kb_documents", "kb_embedding_cache")) -> None:
    target = target_path(warehouse)
    target.mkdir(parents=True, exist_ok=True)
    results = [{"unique_id": f"model.dbrouter.{m}", "status": "success",
                "relation_name": f'"kb"."main"."{m}"'} for m in models]
    (target / "run_results.json").write_text(json.dumps({"metadata": {"invocation_id": invocation_id},
                                                         "results": results}))


@pytest.fixture()
def warehouse(tmp_path):
    wh = tmp_path / "kb.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("create table kb_embedding_cache (content_hash varchar, invocation_id varchar)")
    con.execute("insert into kb_embedding_cache values ('a', 'first'), ('b', 'first'), ('c', 'first'), "
                "('d', 'second'), ('e', 'second')")
    con.close()
    return wh


def test_counts_the_rows_of_the_last_builds_invocation(warehouse):
    _run_results(warehouse, "second")
    assert embedded_by_last_build(warehouse) == 2
    _run_results(warehouse, "third")  # a build that embedded nothing counts 0, not the previous build's rows
    assert embedded_by_last_build(warehouse) == 0


def test_build_without_the_cache_model_embedded_nothing(warehouse):
    _run_results(warehouse, "first", models=("kb_documents",))
    assert embedded_by_last_build(warehouse) == 0


def test_no_build_is_a_clear_error(warehouse):
    with pytest.raises(DbtRunError, match="run_results.json"):
        embedded_by_last_build(warehouse)


def test_timed_warms_up_on_items_it_does_not_time():
    """A held connection keeps its answers: a warm-up item timed again would be timed as a
    question asked again, so the warm-up items are others than the timed sample's."""
    import random

    from dbrouter.eval.kb import timed, timed_sample

    calls: list[int] = []
    items = list(range(5939))
    timed(calls.append, items, n=200, seed=0)
    warm, timed_items = calls[:5], calls[5:]
    assert len(timed_items) == 200 and not set(warm) & set(timed_items)
    assert timed_items == random.Random(0).sample(items, 200)  # the sample timed before the change
    assert timed_sample(items, 200, 0) == (timed_items, warm)
    few: list[int] = []
    timed(few.append, list(range(3)), n=200)
    assert sorted(few[3:]) == [0, 1, 2]  # no other items: the timed ones warm up
