"""A one-question `dbrouter route` loads only what the question needs (issue 36, fast start).

pyarrow imports pandas on its first ``pa.array``/``to_numpy`` and ``Array.take`` imports
``pyarrow.compute``: together ~0.5 s of CPU that a route never uses. The UDFs build their arrays
from buffers (python_udfs/arrow.py); this holds the whole command to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("pandas", "pyarrow.compute", "numpy.ma", "torch", "sentence_transformers", "transformers", "dbt", "scipy",
         "sklearn")


def test_one_question_route_imports_nothing_heavy(built_kb):
    code = ("import json, sys\n"
            "from dbrouter.cli.main import main\n"
            f"rc = main(['route', 'How many singers do we have?', '--warehouse', {str(built_kb['warehouse'])!r}, '--no-llm'])\n"
            f"print(json.dumps([rc, sorted(m for m in {HEAVY!r} if m in sys.modules)]), file=sys.stderr)\n")
    env = {**os.environ, "DBROUTER_EMBEDDER": "hash", "DBROUTER_LOG": "off"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "1. " in proc.stdout, proc.stderr  # a ranking was printed
    rc, heavy = json.loads(proc.stderr.strip().splitlines()[-1])
    assert rc == 0
    assert heavy == []
