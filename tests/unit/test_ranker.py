"""The learned ranker's offline side: features files, R@1 under weights, the conditional-logit fit."""

import random

import pytest

from dbrouter.eval import routed as routed_questions
from dbrouter.eval.routed import Candidate, RoutedQuestion
from dbrouter.routing import ranker
from dbrouter.tune import fitting


def _question(gold_signal: float, other_signal: float, noise: float, gold_first: bool) -> RoutedQuestion:
    """Two candidates: the gold one has the higher lex_name, the other the higher (noisy) database cosine."""
    gold = Candidate("gold", {"lex_name": gold_signal, "database": 0.3}, 2 if gold_first else 1)
    other = Candidate("other", {"lex_name": other_signal, "database": 0.3 + noise}, 1 if gold_first else 2)
    return RoutedQuestion("gold", [other, gold], "s", "q")


def test_fit_learns_the_signal_that_separates_gold():
    rng = random.Random(0)
    qs = [_question(rng.uniform(0.5, 1.0), rng.uniform(0.0, 0.4), rng.uniform(0.0, 0.2), rng.random() < 0.5)
          for _ in range(200)]
    weights = fitting.fit(qs)
    assert set(weights) == set(ranker.SIGNALS)
    assert weights["lex_name"] > 0 and weights["database"] < 0  # the noisy cosine points the wrong way
    assert fitting.r_at_1(qs, weights) == 1.0
    assert fitting.r_at_1(qs, {"database": 1.0}) == 0.0  # the database cosine alone always picks the other


def test_fit_refuses_data_without_a_gold_candidate():
    q = RoutedQuestion("missing", [Candidate("a", {}, 1), Candidate("b", {}, 2)])
    with pytest.raises(ValueError, match="nothing to fit"):
        fitting.fit([q])


def test_top1_ties_go_to_the_better_shortlist_rank_and_method_order_is_kept():
    q = RoutedQuestion("b", [Candidate("a", {"mapped": 1.0}, 2, method_key=(1.0, 0.5)),
                             Candidate("b", {"mapped": 1.0}, 1, method_key=(1.0, 0.9))])
    assert fitting.top1(q, {"mapped": 1.0}) == "b"
    assert fitting.top1(q, None) == "b"
    assert fitting.top1(RoutedQuestion("x", []), {"mapped": 1.0}) is None


def test_features_file_round_trip(tmp_path):
    qs = [_question(0.9, 0.1, 0.05, True)]
    routed_questions.save(qs, tmp_path / "f" / "x.jsonl")
    back = routed_questions.load(tmp_path / "f" / "x.jsonl")
    assert [c.db_id for c in back[0].candidates] == ["other", "gold"] and back[0].gold == "gold"
    assert back[0].candidates[1].signals == qs[0].candidates[1].signals


def test_candidates_from_rows_keeps_only_reranked_in_shortlist_order():
    from tests.unit.evidence_samples import RERANKED, SHORTLIST_ONLY

    rows = [("late", 12, SHORTLIST_ONLY), ("b", 3, RERANKED), ("a", 1, RERANKED)]
    cands = routed_questions.candidates_from_rows(rows)
    assert [c.db_id for c in cands] == ["a", "b"] and cands[0].signals["lex_name"] == 0.8
    assert cands[0].method_key == (1.0, 1.0 + RERANKED["shortlist"]["score"])


def test_contributions_are_value_times_weight_for_every_signal():
    parts = ranker.contributions({"mapped": 0.5, "lex_name": 1.0}, {"mapped": 4.0})
    assert [p[0] for p in parts] == list(ranker.SIGNALS)
    assert dict((n, c) for n, _, _, c in parts)["mapped"] == 2.0
    assert dict((n, c) for n, _, _, c in parts)["lex_name"] == 0.0  # no weight, no part
