"""Enrichment as one call: run an LLM step on a built warehouse, then rebuild what reads its output.

``dbrouter statements structure`` and ``dbrouter examples describe`` are this call with one of
:data:`STEPS`; the CLI only prints what it returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dbrouter.enrich.describing import describe_with_llm
from dbrouter.enrich.structuring import structure_with_llm
from dbrouter.kb.connect import connect
from dbrouter.kb.dbt_runner import run_dbt
from dbrouter.llm import LLMClient, StepReport


@dataclass(frozen=True)
class EnrichStep:
    """One LLM step and the dbt selection that reads what it writes (named by its key in :data:`STEPS`).

    Attributes:
        run: the step: ``run(con, llm, db, redo, progress=...)`` writes its answers into ``dbrouter_llm``.
        select: the dbt selector rebuilt after it wrote anything.
    """

    run: Callable[..., StepReport]
    select: str


STEPS: dict[str, EnrichStep] = {
    "statements": EnrichStep(structure_with_llm, "int_statements_structured+"),
    "examples": EnrichStep(describe_with_llm, "int_examples_described+"),
}
"""The enrichment steps by the CLI's command group: structuring domain statements, describing example
questions."""


@dataclass
class Enriched:
    """What :func:`enrich` did.

    Attributes:
        report: the step's report (``summary()``, ``notes``, ``written``).
        rebuilt: the dbt selection rebuilt, or None when the step wrote nothing.
    """

    report: StepReport
    rebuilt: str | None


def enrich(warehouse: Path, step: EnrichStep, llm: LLMClient, db: str | None = None, redo: bool = False,
           embedder: str | None = None, progress: Callable[[str], None] | None = None,
           quiet: bool = True) -> Enriched:
    """Run ``step`` with ``llm`` on the warehouse, then ``dbt build`` the models that read its answers.

    Args:
        warehouse: a built warehouse (opened for writing: no server may hold it).
        step: one of :data:`STEPS`.
        llm: the configured client.
        db: only this database's items (None: all).
        redo: ask again for items already answered.
        embedder: the embedder the warehouse was built with (None: its default).
        progress: a callback for progress lines.
        quiet: capture dbt's output instead of streaming it.

    Returns:
        An :class:`Enriched`.

    Raises:
        WarehouseError: the warehouse is missing or held by another process.
        DbtRunError: the rebuild failed.
    """
    con = connect(warehouse, read_only=False, embedder=embedder)
    try:
        report = step.run(con, llm, db, redo, progress=progress)
    finally:
        con.close()
    if not report.written:
        return Enriched(report, None)
    run_dbt(["build", "--select", step.select], warehouse, embedder, quiet=quiet)
    return Enriched(report, step.select)
