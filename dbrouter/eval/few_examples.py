"""Does a handful of example questions make routing worse than none? (issue 13's new-user case)

    python -m dbrouter.eval.few_examples --benchmark ../shared/benchmarks/spider-route [--workdir .dbrouter/few-examples]

Builds the demo repository (demo/sources.yml) three times - no examples, the demo's 3 examples for
two databases only (``--few``, default singer and college_3), the demo's examples for every
database - and routes the benchmark's **test** questions of the demo databases through
``route_query_ranked`` (top 1) and ``route_query`` (which may abstain). Evaluation only: nothing is
chosen from these numbers. Prints one line per KB: R@1 over all questions and over the questions
of the databases without examples in the "few" KB.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: what --write updates

import dbrouter
from dbrouter.eval.benchmark import load_benchmark
from dbrouter.kb.build import build_atomically
from dbrouter.sources.config import load_sources


def build(base: Path, examples: list[str]) -> Path:
    """A copy of the demo with ``examples`` (JSON lines) as its examples file, built into base/kb.duckdb."""
    if base.exists():
        shutil.rmtree(base)
    shutil.copytree(ROOT / "demo", base)
    (base / "examples.jsonl").write_text("".join(line + "\n" for line in examples))
    build_atomically(load_sources(base / "sources.yml"), base / "kb.duckdb", quiet=True)
    return base / "kb.duckdb"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", required=True, help="benchmark directory holding the demo databases' test questions")
    ap.add_argument("--workdir", default=".dbrouter/few-examples", type=Path)
    ap.add_argument("--few", default="singer,college_3", help="databases given examples in the 'few' KB")
    args = ap.parse_args()
    lines = [line for line in (ROOT / "demo" / "examples.jsonl").read_text().splitlines() if line.strip()]
    dbs = sorted({json.loads(line)["db_id"] for line in lines})
    few = set(args.few.split(","))
    questions = [(q.db_id, q.question) for q in load_benchmark(args.benchmark).test if q.db_id in dbs]
    if not questions:
        raise SystemExit(f"{args.benchmark} has no test questions of the demo databases ({', '.join(dbs)})")
    print(f"{len(questions)} test questions of {len(dbs)} demo databases", flush=True)
    kbs = {"none": [], "few": [line for line in lines if json.loads(line)["db_id"] in few], "all": lines}
    for name, examples in kbs.items():
        con = dbrouter.connect(build(args.workdir / name, examples))
        try:
            top = [con.execute("select db_id from route_query_ranked(?, 1)", [q]).fetchone()[0] for _, q in questions]
            answered = [con.execute("select route_query(?)", [q]).fetchone()[0] for _, q in questions]
            trusted = con.execute("select examples_trusted from kb_routing_calibration").fetchone()[0]
        finally:
            con.close()
        right = [t == db for t, (db, _) in zip(top, questions)]
        others = [r for r, (db, _) in zip(right, questions) if db not in few]
        print(f"{name:5} examples={len(examples):2} examples_trusted={trusted} R@1 {sum(right) / len(right):.4f} "
              f"(n={len(right)}); databases without examples in 'few' {sum(others) / len(others):.4f} (n={len(others)}); "
              f"route_query right {sum(a == db for a, (db, _) in zip(answered, questions)) / len(questions):.4f}, "
              f"NULL {sum(a is None for a in answered) / len(questions):.4f}", flush=True)


if __name__ == "__main__":
    main()
