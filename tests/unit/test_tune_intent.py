"""The intent probe's tune script without a benchmark: its negatives never come from the corpus
`eval abstain` measures with, and the generated macro holds what the routing SQL reads."""

import re

from dbrouter.eval.offtopic import offtopic_questions
from dbrouter.tune.intent import EMBEDDERS, IntentProbe, fitted_macro, negative_questions, parse_fitted, shipped_probes


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).strip()


def test_negatives_are_the_seed_and_the_tune_file_never_the_evaluation_corpus():
    negatives = negative_questions()
    assert len(negatives) > 150 and len(set(negatives)) == len(negatives)
    measured = {_norm(t) for _, t in offtopic_questions()}
    assert not {_norm(q) for q in negatives} & measured


def test_fitted_macro_round_trips_weights_norm_bias_threshold():
    probe = IntentProbe("minilm", [3.0, 4.0], -0.5, -0.4, 0.01, 0.9, 10, 5)
    text = fitted_macro([probe])
    assert text.startswith("{#- GENERATED") and "{% macro fitted_intent() -%}" in text
    value = parse_fitted(text)
    assert value == {"minilm": {"weights": [3.0, 4.0], "norm": 5.0, "bias": -0.5, "threshold": -0.4}}


def test_the_shipped_probes_cover_the_embedders_whose_space_ships_with_the_package():
    value = shipped_probes()
    assert sorted(value) == sorted(EMBEDDERS)
    for probe in value.values():
        assert len(probe["weights"]) == 384
        assert abs(sum(w * w for w in probe["weights"]) ** 0.5 - probe["norm"]) < 1e-3
