import json

import pytest

from dbrouter.errors import DbrouterError
from dbrouter.routing.evidence import EvidenceError, MappedPhrase, RouteEvidence
from tests.unit.evidence_samples import RERANKED, SHORTLIST_ONLY, evidence_json


def test_parses_reranked_evidence_from_text_and_dict():
    ev = RouteEvidence.from_json(json.dumps(RERANKED))
    assert ev == RouteEvidence.from_json(RERANKED)
    assert ev.reranked and ev.shortlist.rank == 2 and ev.shortlist.top_column == "orchestra.Orchestra"
    assert ev.connectivity == 1 and ev.join_tables == ["orchestra", "performance"] and ev.mapped_by is None
    assert ev.mappings[0] == MappedPhrase("orchestra", "orchestra", "orchestra.Orchestra_ID", 1.0, "name", 3)
    assert ev.mappings[1].column is None and ev.mappings[1].similarity is None


def test_to_dict_gives_back_the_same_json():
    ev = RouteEvidence.from_json(json.dumps(RERANKED))
    assert json.dumps(ev.to_dict()) == json.dumps(RERANKED)  # same keys, same order, same values
    with_llm = RouteEvidence.from_json({**RERANKED, "mapped_by": "llm"})
    assert with_llm.mapped_by == "llm" and with_llm.to_dict() == {**RERANKED, "mapped_by": "llm"}


def test_shortlist_only_stage_has_no_rerank_fields():
    ev = RouteEvidence.from_json(SHORTLIST_ONLY)
    assert not ev.reranked and ev.shortlist.rank == 12 and ev.shortlist.example_imputed
    assert ev.mappings is None and ev.connectivity is None and ev.needs_implied_edges is None
    assert ev.to_dict() == SHORTLIST_ONLY


def test_null_mappings_of_a_reranked_candidate_stay_null():
    ev = RouteEvidence.from_json(evidence_json(phrases=0, na_phrases=0, mappings=None))
    assert ev.reranked and ev.mappings is None and ev.to_dict()["mappings"] is None


@pytest.mark.parametrize("path, key", [((), "coverage"), (("shortlist",), "top_table"),
                                       (("mappings", 1), "n_mappings")])
def test_missing_key_is_named(path, key):
    raw = evidence_json()
    target = raw
    for p in path:
        target = target[p]
    del target[key]
    with pytest.raises(EvidenceError, match=f"no key '{key}'") as info:
        RouteEvidence.from_json(json.dumps(raw))
    assert isinstance(info.value, DbrouterError) and "dbrouter build" in str(info.value)


def test_not_json_not_an_object_and_unknown_stage_are_clear_errors():
    with pytest.raises(EvidenceError, match="not JSON"):
        RouteEvidence.from_json("{stage")
    with pytest.raises(EvidenceError, match="expected a JSON object"):
        RouteEvidence.from_json("[]")
    with pytest.raises(EvidenceError, match="unknown stage 'final'"):
        RouteEvidence.from_json({**RERANKED, "stage": "final"})
