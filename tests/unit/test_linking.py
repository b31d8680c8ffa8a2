"""Schema linking pieces that need no KB: gold columns from SQL, the join-path completion, the
selection rule, the word matcher and the feature rows."""

from __future__ import annotations

import numpy as np
import pytest

from dbrouter.eval.gold import GoldSchema, gold_schema
from dbrouter.linking.features import FEATURES, DatabaseSignals, column_features, words
from dbrouter.linking.joins import join_path_keys
from dbrouter.linking.linker import select_columns

SCHEMA = {"singer": {"singer_id", "name", "age", "country"},
          "concert": {"concert_id", "concert_name", "stadium_id", "year"},
          "singer_in_concert": {"singer_id", "concert_id"},
          "stadium": {"stadium_id", "name", "capacity"}}


def test_gold_resolves_aliases_per_scope():
    sql = ("SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = T2.singer_id "
           "WHERE T2.concert_id IN (SELECT T1.concert_id FROM concert AS T1 WHERE T1.year = 2014)")
    gold = gold_schema(sql, SCHEMA)
    assert gold.error is None
    assert gold.tables == {"singer", "singer_in_concert", "concert"}
    # T1 is singer outside and concert inside the sub-query
    assert gold.columns == {"singer.name", "singer.singer_id", "singer_in_concert.singer_id",
                            "singer_in_concert.concert_id", "concert.concert_id", "concert.year"}


def test_gold_unqualified_columns_and_count_star():
    gold = gold_schema("SELECT count(*) FROM singer WHERE Age > 30", SCHEMA)
    assert gold.columns == {"singer.age"} and gold.tables == {"singer"}
    star = gold_schema("select count(*) from stadium", SCHEMA)
    assert star.columns == set() and star.tables == {"stadium"}


def test_gold_unparseable_sql_is_reported():
    gold = gold_schema("SELECT FROM WHERE ((", SCHEMA)
    assert gold.error


def test_covered_by_needs_every_column_and_every_table():
    gold = GoldSchema(tables={"singer", "stadium"}, columns={"singer.age"})
    assert not gold.covered_by({"singer.age"})  # stadium (count(*)) has no linked column
    assert gold.covered_by({"singer.age", "stadium.capacity"})
    assert not gold.covered_by({"singer.name", "stadium.capacity"})


EDGES = [("singer", "singer_id", "singer_in_concert", "singer_id", True),
         ("singer_in_concert", "singer_id", "singer", "singer_id", True),
         ("concert", "concert_id", "singer_in_concert", "concert_id", True),
         ("singer_in_concert", "concert_id", "concert", "concert_id", True),
         ("concert", "stadium_id", "stadium", "stadium_id", False)]


def test_join_path_adds_the_bridge_table_and_its_keys():
    tables, keys = join_path_keys(["singer", "stadium"], EDGES)
    assert tables == ["concert", "singer", "singer_in_concert", "stadium"]
    assert keys == {"singer.singer_id", "singer_in_concert.singer_id", "singer_in_concert.concert_id",
                    "concert.concert_id", "concert.stadium_id", "stadium.stadium_id"}


def test_join_path_leaves_unreachable_tables_alone():
    tables, keys = join_path_keys(["singer", "orphan"], EDGES)
    assert tables == ["orphan", "singer"] and keys == set()


def test_selection_rule_thresholds_and_table_threshold():
    names = ["singer.name", "singer.age", "singer.country", "stadium.capacity", "stadium.name"]
    p = np.array([0.9, 0.04, 0.03, 0.02, 0.5])
    got = select_columns(names, p, [], threshold=0.1, table_threshold=0.035, min_columns=1)
    # singer.name and stadium.name pass 0.1; singer.age passes the lower table threshold
    assert got == ["singer.name", "stadium.name", "singer.age"]
    assert select_columns(names, np.zeros(5), [], threshold=0.1, table_threshold=0.1, min_columns=2) == \
        ["singer.name", "singer.age"]


def test_selection_adds_join_keys_after_the_scored_columns():
    names = ["singer.name", "stadium.capacity"]
    got = select_columns(names, np.array([0.9, 0.8]), EDGES, threshold=0.5, table_threshold=0.5)
    assert got[:2] == ["singer.name", "stadium.capacity"] and "concert.stadium_id" in got


@pytest.mark.parametrize("text,expected", [
    ("HomeTeamName", {"home", "team", "name"}),
    ("singer_in_concert", {"singer", "in", "concert"}),
    ("How many countries have cities?", {"how", "many", "country", "have", "city"}),
    (None, set()),
])
def test_words(text, expected):
    assert words(text) == expected


def _signals() -> DatabaseSignals:
    def unit(*xs):
        v = np.asarray(xs, np.float32)
        return v / np.linalg.norm(v)

    return DatabaseSignals(
        "db", columns=[("singer", "Name", False, False, "name"), ("singer", "Age", False, False, "age"),
                       ("stadium", "Capacity", False, False, "capacity")],
        column_vectors=np.stack([unit(1, 0, 0), unit(0, 1, 0), unit(0, 0, 1)]),
        tables=["singer", "stadium"], table_vectors=np.stack([unit(1, 1, 0), unit(0, 0, 1)]),
        examples=[("How old is each singer?", ["singer.age"], ["singer"]),
                  ("What is the biggest stadium?", ["stadium.capacity"], ["stadium"])],
        example_vectors=np.stack([unit(0, 1, 0), unit(0, 0, 1)]),
        statements=[("capacity refers to Capacity", ["stadium.capacity"])],
        statement_vectors=np.stack([unit(0, 0, 1)]),
        edges=[])


def test_feature_rows_follow_the_declared_order():
    sig = _signals()
    qv = np.array([0, 1, 0.5], np.float32)
    f = column_features("What is the age of singers?", qv / np.linalg.norm(qv), sig)
    assert f.shape == (3, len(FEATURES))
    col = {name: i for i, name in enumerate(FEATURES)}
    assert f[1, col["ex_top1"]] == 1.0 and f[0, col["ex_top1"]] == 0.0  # nearest example uses singer.age
    assert f[1, col["lex_col"]] == 1.0 and f[2, col["lex_col"]] == 0.0
    assert f[1, col["inv_rank"]] == 1.0
    assert f[2, col["st_max"]] > 0 and f[2, col["st_lex"]] > 0  # the statement names Capacity
    assert np.all(f[:, col["bias"]] == 1.0)
    assert f[1, col["ex_max*ex_top1"]] == pytest.approx(f[1, col["ex_max"]])


def test_a_question_does_not_vote_for_itself_when_asked():
    sig = _signals()
    qv = np.array([0, 1, 0], np.float32)
    col = FEATURES.index("ex_top1")
    own = column_features("How old is each singer?", qv, sig, skip_question="How old is each singer?")
    assert own[1, col] == 0.0 and own[2, col] == 1.0


def test_co_use_follows_columns_used_together_and_skips_the_own_example():
    sig = _signals()
    sig.examples = [("Names and ages?", ["singer.name", "singer.age"], ["singer"]),
                    ("Ages?", ["singer.age"], ["singer"]),
                    ("Capacities?", ["stadium.capacity"], ["stadium"])]
    sig.example_vectors = np.stack([np.array([0, 1, 0], np.float32)] * 3)
    col = FEATURES.index("co_use")
    qv = np.array([0, 1, 0], np.float32)  # anchors: singer.age first (cosine), and the nearest example's columns
    f = column_features("Ages?", qv, sig)
    assert f[0, col] == pytest.approx(0.5)  # singer.name: one of the two examples using singer.age uses it
    assert f[2, col] == 0.0  # stadium.capacity is never used with an anchor
    skipped = column_features("Ages?", qv, sig, skip_question="Names and ages?")
    assert skipped[0, col] == 0.0  # the only example pairing name and age is the question itself
