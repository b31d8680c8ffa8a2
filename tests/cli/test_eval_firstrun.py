"""`dbrouter eval firstrun` through the entry point (hash embedder, one cold route)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.slow


def test_eval_firstrun_times_build_and_cold_and_warm_routing(tmp_path):
    bench = tmp_path / "BENCHMARKS.md"
    proc = run_cli("eval", "firstrun", "--sources", str(ROOT / "demo" / "sources.yml"), "--workdir",
                   str(tmp_path / "work"), "--runs", "2", "--embedder", "hash", "--write", str(bench), "--json")
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["embedder"] == "hash" and data["distill_s"] is None and len(data["route_cold_s"]) == 2
    assert data["build_s"] > 0 and all(c > 0 for c in data["route_cold_s"]) and 0 < data["warm_p50_ms"] <= data["warm_p95_ms"]
    # a cold route's CPU: the interpreter alone costs more than 0.01 s, and it is not the build's
    assert len(data["route_cold_cpu_s"]) == 2 and all(0.01 < c < data["build_s"] * 2 for c in data["route_cold_cpu_s"])
    text = bench.read_text()
    assert "<!-- dbrouter:eval firstrun hash -->" in text and "cold `dbrouter route` of one question" in text
    assert "the same, CPU seconds" in text
    assert "Command: `dbrouter eval firstrun --sources" in text and (tmp_path / "work" / "firstrun.duckdb").is_file()
