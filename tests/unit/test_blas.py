"""python_udfs.blas: one BLAS thread inside the block, and no library scan once the process
started its BLAS with one thread (the command line)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CODE = """
import json, sys
import numpy
from python_udfs import blas
if sys.argv[1] == "pinned":
    blas.assume_one_thread()
with blas.one_blas_thread():
    inside = None
    if "threadpoolctl" in sys.modules:
        from threadpoolctl import threadpool_info
        inside = sorted({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
print(json.dumps({"scanned": blas._controller is not None, "inside": inside}))
"""


def _run(mode: str, env: dict[str, str]) -> dict:
    out = subprocess.run([sys.executable, "-c", CODE, mode], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def test_the_block_limits_blas_to_one_thread():
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    got = _run("scan", env)
    assert got == {"scanned": True, "inside": [1]}


def test_a_process_started_with_one_thread_skips_the_scan():
    got = _run("pinned", {**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert got == {"scanned": False, "inside": None}


def test_the_command_line_pins_blas_before_numpy_and_says_so():
    code = ("import os, sys; import dbrouter.cli; from python_udfs import blas; "
            "print(os.environ['OPENBLAS_NUM_THREADS'], blas._pinned, 'numpy' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["1", "True", "False"]
    env["OPENBLAS_NUM_THREADS"] = "2"  # the user's own setting: kept, and the block still limits
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["2", "False", "False"]
