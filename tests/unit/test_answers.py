"""The kept answers of held routing calls (dbrouter/kb/answers.py): exact keys, bounds, order."""

from __future__ import annotations

import threading

from dbrouter.kb import answers
from dbrouter.kb.answers import MISSING, Answers


def test_an_answer_is_found_only_by_its_own_scope_entry_k_and_text():
    kept = Answers()
    key = Answers.key("['a']", "route_query_json_udf", 5, "How many singers?")
    kept.put(key, '{"ranking": []}', 15)
    assert kept.get(key) == '{"ranking": []}' and kept.hits == 1
    for other in (Answers.key(None, "route_query_json_udf", 5, "How many singers?"),
                  Answers.key("['b']", "route_query_json_udf", 5, "How many singers?"),
                  Answers.key("['a']", "route_query_udf", 5, "How many singers?"),
                  Answers.key("['a']", "route_query_json_udf", 3, "How many singers?"),
                  Answers.key("['a']", "route_query_json_udf", 5, "how many singers?"),
                  Answers.key("['a']", "route_query_json_udf", 5, "How many singers? ")):
        assert kept.get(other) is MISSING
    assert kept.hits == 1


def test_a_kept_null_answer_is_not_a_missing_one():
    kept = Answers()
    key = Answers.key(None, "route_query_udf", None, "weather tomorrow")
    kept.put(key, None, 16)
    assert kept.get(key) is None


def test_the_least_recently_asked_goes_first_beyond_the_count():
    kept = Answers(count=2)
    keys = [Answers.key(None, "e", None, q) for q in ("q1", "q2", "q3")]
    kept.put(keys[0], "a1", 2)
    kept.put(keys[1], "a2", 2)
    assert kept.get(keys[0]) == "a1"  # q1 asked again: q2 is now the oldest
    kept.put(keys[2], "a3", 2)
    assert len(kept) == 2 and kept.get(keys[1]) is MISSING
    assert kept.get(keys[0]) == "a1" and kept.get(keys[2]) == "a3"


def test_the_characters_kept_are_bounded_and_a_large_answer_is_not_kept():
    kept = Answers(chars=100)
    for i in range(10):
        kept.put(Answers.key(None, "e", None, f"q{i}"), "x" * 30, 30)  # 32 characters each
    assert len(kept) == 3  # 96 of the 100
    assert kept.get(Answers.key(None, "e", None, "q9")) == "x" * 30
    assert kept.get(Answers.key(None, "e", None, "q6")) is MISSING
    big = Answers.key(None, "e", None, "big")
    one = Answers()
    one.put(big, "x", answers.MAX_ONE)
    assert one.get(big) is MISSING and len(one) == 0
    assert Answers.key(None, "e", None, "q" * (answers.MAX_ONE + 1)) is None
    assert one.get(None) is MISSING
    one.put(None, "x", 1)
    assert len(one) == 0


def test_the_same_key_put_again_replaces_its_size():
    kept = Answers(chars=100)
    key = Answers.key(None, "e", None, "q")
    for _ in range(50):
        kept.put(key, "x" * 60, 60)
    assert len(kept) == 1 and kept.get(key) == "x" * 60


def test_threads_putting_and_getting_keep_the_bounds():
    kept = Answers(count=50, chars=10_000)

    def work(t: int) -> None:
        for i in range(500):
            key = Answers.key(None, "e", None, f"{t}-{i % 80}")
            if kept.get(key) is MISSING:
                kept.put(key, f"{t}-{i % 80}", 8)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(kept) == 50
    assert all(kept.get(Answers.key(None, "e", None, q)) in (MISSING, q) for q in (f"{t}-{i}" for t in range(4) for i in range(80)))


def test_dbrouter_kept_answers_sets_the_count_and_zero_keeps_none(monkeypatch):
    import pytest

    from dbrouter.errors import DbrouterError

    keys = [Answers.key(None, "e", None, q) for q in ("q1", "q2", "q3")]
    monkeypatch.setenv("DBROUTER_KEPT_ANSWERS", "2")
    two = Answers()
    for key in keys:
        two.put(key, "a", 1)
    assert len(two) == 2 and two.get(keys[0]) is MISSING and two.get(keys[2]) == "a"
    monkeypatch.setenv("DBROUTER_KEPT_ANSWERS", "0")
    none = Answers()
    none.put(keys[0], "a", 1)
    assert len(none) == 0 and none.get(keys[0]) is MISSING and none.hits == 0
    for bad in ("-1", "lots", "1.5", "²"):
        monkeypatch.setenv("DBROUTER_KEPT_ANSWERS", bad)
        with pytest.raises(DbrouterError, match="DBROUTER_KEPT_ANSWERS must be a whole number"):
            Answers()
    monkeypatch.delenv("DBROUTER_KEPT_ANSWERS")
    assert Answers()._count == answers.MAX_ANSWERS
