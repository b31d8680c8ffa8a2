"""Benchmarks in the shared directory format (databases.jsonl, train/test.jsonl, ...)."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

from dbrouter.errors import BenchmarkError

SETTINGS = ("in-domain", "schema-only", "cross-domain")
CROSS_DOMAIN_SHARE = 5  # 1 database in 5 (20%) has its train questions withheld


@dataclass
class Question:
    """One benchmark question with its gold database, SQL and (BIRD) evidence."""

    id: str
    question: str
    db_id: str
    sql: str
    evidence: str | None = None


@dataclass
class Benchmark:
    """A loaded benchmark directory: its databases and its train/test questions."""

    name: str
    path: Path
    db_ids: list[str]
    train: list[Question]
    test: list[Question]

    @property
    def databases_file(self) -> Path:
        """The benchmark's databases.jsonl (schemas in the ``schema_json`` source format)."""
        return self.path / "databases.jsonl"

    def database_rows(self) -> list[dict]:
        """Every database of :attr:`databases_file` as its JSON object (``schema_json`` format)."""
        text = self.databases_file.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _questions(path: Path) -> list[Question]:
    out = []
    for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                obj = json.loads(line)
                out.append(Question(obj["id"], obj["question"], obj["db_id"], obj.get("sql", ""),
                                    obj.get("evidence")))
            except (json.JSONDecodeError, KeyError) as exc:
                raise BenchmarkError(f"{path}:{no}: malformed question line ({exc})") from exc
    return out


def load_benchmark(path: str | Path) -> Benchmark:
    """Load a benchmark directory.

    Args:
        path: directory holding databases.jsonl, train.jsonl and test.jsonl.

    Returns:
        The :class:`Benchmark`.

    Raises:
        BenchmarkError: a file is missing or malformed.
    """
    path = Path(path)
    for name in ("databases.jsonl", "train.jsonl", "test.jsonl"):
        if not (path / name).is_file():
            raise BenchmarkError(f"{path / name} not found: pass a benchmark directory "
                                 "(e.g. ../shared/benchmarks/spider-route) or set DBROUTER_BENCHMARK")
    db_ids = [json.loads(l)["db_id"] for l in (path / "databases.jsonl").read_text().splitlines() if l.strip()]
    return Benchmark(path.name, path, db_ids, _questions(path / "train.jsonl"), _questions(path / "test.jsonl"))


def is_withheld(db_id: str) -> bool:
    """Cross-domain split: a database is withheld (no train examples in the KB) when the first
    8 hex digits of md5(db_id), as an integer, are divisible by 5 - a fixed ~20% of databases."""
    return int(hashlib.md5(db_id.encode("utf-8")).hexdigest()[:8], 16) % CROSS_DOMAIN_SHARE == 0


def setting_split(bench: Benchmark, setting: str) -> tuple[list[Question], list[Question]]:
    """Examples to put in the KB and questions to evaluate, for a setting.

    Args:
        bench: the benchmark.
        setting: in-domain (all train questions are examples), schema-only (none),
            cross-domain (train questions of withheld databases removed; evaluated on
            the withheld databases' test questions).

    Returns:
        (examples, test questions)
    """
    if setting == "in-domain":
        return bench.train, bench.test
    if setting == "schema-only":
        return [], bench.test
    if setting == "cross-domain":
        return ([q for q in bench.train if not is_withheld(q.db_id)],
                [q for q in bench.test if is_withheld(q.db_id)])
    raise BenchmarkError(f"unknown setting {setting!r}: choose one of {', '.join(SETTINGS)}")


def split_train(bench: Benchmark, seed: int = 0) -> tuple[list[Question], list[Question]]:
    """Each database's train questions split 50/50 (seeded), for choosing constants on train only.

    Args:
        bench: the benchmark.
        seed: shuffle seed.

    Returns:
        (half A: may become stored examples, half B: questions to route)
    """
    by_db: dict[str, list[Question]] = {}
    for q in bench.train:
        by_db.setdefault(q.db_id, []).append(q)
    rng = random.Random(seed)
    a: list[Question] = []
    b: list[Question] = []
    for qs in by_db.values():
        qs = qs[:]
        rng.shuffle(qs)
        a += qs[: len(qs) // 2]
        b += qs[len(qs) // 2:]
    return a, b
