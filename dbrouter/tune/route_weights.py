"""Choose the first ranking's weights on TRAIN questions only (how the dbt vars were set).

Usage:
    dbrouter eval route --benchmark ../shared/benchmarks/spider-route --setting schema-only --limit 1
    python -m dbrouter.tune.route_weights --benchmark ../shared/benchmarks/spider-route \
        --warehouse .dbrouter/eval/spider-route/kb.duckdb

The warehouse must hold the benchmark's schema documents (any eval route build does). Every train
question is routed against the databases' schema documents and against the *other* train
questions as examples (leave-one-out); nothing from the test split is read. Prints R@1 for a grid of
schema weights (database / table / column), then for the example combinations: plain weighted
sum, and the sum with the example signal of example-less databases imputed as schema + gap, on
the in-domain split and on the cross-domain split of train (withheld databases: dbrouter.eval.benchmark).
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import duckdb
import numpy as np

from dbrouter.eval.benchmark import is_withheld
from python_udfs.embeddings import get_embedder


def signals(bench: str, warehouse: str) -> dict[str, np.ndarray]:
    con = duckdb.connect(warehouse, read_only=True)
    docs = con.execute("select db_id, doc_kind, embedding from kb_document_embeddings "
                       "where doc_kind in ('database', 'table', 'column')").fetchall()
    con.close()
    dbs = sorted({d for d, _, _ in docs})
    idx = {d: i for i, d in enumerate(dbs)}
    train = [json.loads(line) for line in Path(f"{bench}/train.jsonl").read_text().splitlines()]
    q = get_embedder("minilm").encode([t["question"] for t in train])
    out: dict[str, np.ndarray] = {"dbs": np.array(dbs), "gold": np.array([idx[t["db_id"]] for t in train])}
    for kind in ("database", "table", "column"):
        owners = np.array([idx[d] for d, k, _ in docs if k == kind])
        sims = q @ np.stack([np.asarray(v) for _, k, v in docs if k == kind]).T
        mat = np.zeros((len(q), len(dbs)), dtype=np.float32)
        for j in range(len(dbs)):
            cols = np.where(owners == j)[0]
            if len(cols):
                top = -np.sort(-sims[:, cols], axis=1)[:, :3]
                mat[:, j] = top[:, 0] if kind == "database" else top.mean(1)
        out[kind] = mat
    sims = q @ q.T
    np.fill_diagonal(sims, -np.inf)  # leave-one-out
    ex = np.full((len(q), len(dbs)), -np.inf, dtype=np.float32)
    for j in range(len(dbs)):
        members = np.where(out["gold"] == j)[0]
        if len(members):
            ex[:, j] = sims[:, members].max(1)
    out["example"] = ex
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", required=True)
    ap.add_argument("--warehouse", required=True)
    args = ap.parse_args()
    s = signals(args.benchmark, args.warehouse)
    gold, D, T, C, E = s["gold"], s["database"], s["table"], s["column"], s["example"]
    r1 = lambda score, mask=None: float(((score.argmax(1) == gold)[mask] if mask is not None else  # noqa: E731
                                          (score.argmax(1) == gold)).mean())
    grid = []
    for wd, wt, wc in itertools.product([0, 0.5, 1, 2], repeat=3):
        if wd + wt + wc:
            grid.append((r1((wd * D + wt * T + wc * C) / (wd + wt + wc)), wd, wt, wc))
    grid.sort(reverse=True)
    print("schema-only R@1, best weights (database, table, column):", grid[:5])
    _, wd, wt, wc = grid[0]
    schema = (wd * D + wt * T + wc * C) / (wd + wt + wc)
    withheld = np.array([is_withheld(d) for d in s["dbs"]])
    e_cross = np.where(withheld[None, :], -np.inf, E)
    qmask = withheld[gold]
    rows = np.arange(len(gold))
    gap = float(np.mean(np.where(np.isinf(E), 0, E)[rows, gold] - schema[rows, gold]))
    for w in (0.5, 1, 2):
        plain = lambda e, w=w: (schema + w * np.where(np.isinf(e), 0, e)) / (1 + w)  # noqa: E731
        imputed = lambda e, w=w: (schema + w * np.where(np.isinf(e), schema + gap, e)) / (1 + w)  # noqa: E731
        print(f"w_example={w}: plain in-domain {r1(plain(E)):.4f} cross-domain {r1(plain(e_cross), qmask):.4f} | "
              f"imputed (gap {gap:.3f}) in-domain {r1(imputed(E)):.4f} cross-domain {r1(imputed(e_cross), qmask):.4f}")


if __name__ == "__main__":
    main()
