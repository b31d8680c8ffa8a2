"""Warm `route_query` latency on an evaluation KB that `dbrouter eval route` left behind, on an
otherwise idle machine (the eval's own measurement runs right after its routing loop, which may
share the machine with other work).

    python -m dbrouter.eval.latency --warehouse .dbrouter/eval/spider-route/kb.duckdb \
        --benchmark ../shared/benchmarks/spider-route --setting in-domain [--n 200]

The questions are the setting's test questions and the sample is the eval's (seed 0), timed
by the same function (:func:`dbrouter.eval.kb.latency`: 5 warm-up calls, then ``n`` timed).
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: what --write updates

from dbrouter.eval.benchmark import SETTINGS, load_benchmark, setting_split
from dbrouter.eval.kb import latency
from dbrouter.kb.connect import connect


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warehouse", required=True, type=Path)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--setting", required=True, choices=SETTINGS)
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    _, questions = setting_split(load_benchmark(args.benchmark), args.setting)
    con = connect(args.warehouse)
    try:
        p50, p95 = latency(con, [q.question for q in questions], n=args.n)
    finally:
        con.close()
    print(f"{Path(args.benchmark).name} {args.setting}: route_query warm p50 {p50:.1f} ms, p95 {p95:.1f} ms "
          f"({args.n} test questions)")


if __name__ == "__main__":
    main()
