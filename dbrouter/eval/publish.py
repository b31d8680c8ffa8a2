"""The one way an eval shows its result: print it (text or one JSON line) and record its block
in BENCHMARKS.md with the command, the date and the machine.

A block is delimited by ``<!-- dbrouter:<key> -->`` and ``<!-- /dbrouter:<key> -->`` and replaced
on every recorded run (appended the first time); the rest of the file is left as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbrouter.console import err


@dataclass
class Report:
    """An eval's result, ready to print and record.

    Attributes:
        key: BENCHMARKS.md block key, e.g. ``eval route spider-route in-domain``.
        command: the command line that reproduces the numbers (recorded under the block).
        data: the result printed with ``--json`` (one line).
        markdown: the block without its ``Command:`` line.
        note: appended to the ``Command:`` line after the machine (e.g. how long it took).
        text: printed without ``--json``; None prints ``markdown``.
    """

    key: str
    command: str
    data: dict[str, Any]
    markdown: str
    note: str = ""
    text: str | None = None

    def block(self) -> str:
        """The markdown block as recorded: the body, then command, date and machine.

        Returns:
            Markdown text ending with a newline.
        """
        note = f"; {self.note}" if self.note else ""
        return f"{self.markdown}Command: `{self.command}` - {time.strftime('%Y-%m-%d')}, {machine()}{note}.\n"


def publish(report: Report, as_json: bool, write: Path | None, limit: int | None = None) -> None:
    """Print a result and record it in BENCHMARKS.md.

    Args:
        report: the result.
        as_json: print ``report.data`` as one JSON line instead of the text.
        write: BENCHMARKS.md path, or None not to record.
        limit: a smoke run's question limit; limited runs are printed but never recorded.
    """
    if as_json:
        print(json.dumps(report.data), flush=True)
    else:
        print(report.markdown if report.text is None else report.text, flush=True)
    if write and limit:
        err("--limit given: results not written to BENCHMARKS.md (whole splits only)")
    elif write:
        update_benchmarks_md(write, report.key, report.block())


def update_benchmarks_md(path: Path, key: str, body: str) -> None:
    """Replace (or append) the block ``key`` of BENCHMARKS.md.

    Args:
        path: the BENCHMARKS.md file (created when missing).
        key: block identifier, e.g. ``eval route spider-route in-domain``.
        body: markdown of the block.
    """
    start, end = f"<!-- dbrouter:{key} -->", f"<!-- /dbrouter:{key} -->"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def machine() -> str:
    """One line describing this machine.

    Returns:
        Cores, memory, CPU model and Python version, e.g. ``2 cores, 8 GiB, <cpu>, Python 3.11.9``.
    """
    mem = ""
    with contextlib.suppress(OSError):
        found = re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())
        mem = f", {int(found.group(1)) / 1024 / 1024:.0f} GiB" if found else ""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        found = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = found.group(1).strip() if found else cpu
    return f"{os.cpu_count()} cores{mem}, {cpu}, Python {platform.python_version()}"
