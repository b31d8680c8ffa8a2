"""Every ``DBROUTER_*`` environment variable, once: its name, default and what it does.

The rest of the package reads them through :func:`get` (and :func:`seconds`), so a value that is
set but empty or blank means "unset" everywhere (``DBROUTER_LLM_CACHE=""`` once meant the current
directory) and a malformed number is one error naming the variable. ``python_udfs`` imports no
``dbrouter`` code: it reads ``DBROUTER_EMBEDDER`` and ``DBROUTER_CACHE_DIR`` itself, with the same
rule, and they are listed here too. docs/configuration.md is generated from :data:`SETTINGS`
(``python -m dbrouter.settings > docs/configuration.md``; a test keeps it current and fails on a
variable the code reads that is not listed).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dbrouter.errors import DbrouterError


@dataclass(frozen=True)
class Setting:
    """One environment variable.

    Attributes:
        name: the variable.
        default: its value when unset or blank (None: no value, the feature is off or asked for).
        help: what it does, for docs/configuration.md.
        topic: the group it is listed under.
        verbatim: the value is used as it is (a password), not stripped of surrounding space.
    """

    name: str
    default: str | None
    help: str
    topic: str
    verbatim: bool = False


SETTINGS: tuple[Setting, ...] = (
    Setting("DBROUTER_WAREHOUSE", "dbrouter.duckdb", "the KB file when a command gets no `--warehouse`; "
            "`dbrouter build` sets it for dbt to the copy it builds (profiles.example.yml's `path`)", "knowledge base"),
    Setting("DBROUTER_EMBEDDER", "minilm", "the embedder (`minilm`, `m2v`, `hash`) when a command gets no "
            "`--embedder`; read by python_udfs too (the dbt plugin's default)", "knowledge base"),
    Setting("DBROUTER_CACHE_DIR", "~/.cache/dbrouter", "where the distilled static model (m2v) is kept; read by "
            "python_udfs", "knowledge base"),
    Setting("DBROUTER_PROJECT_DIR", None, "a dbrouter checkout whose dbt project `build` runs instead of the one "
            "shipped in the package", "knowledge base"),
    Setting("DBROUTER_BUILD_MEMORY_LIMIT", "2.5GB", "DuckDB's memory during `dbt build` (spills beyond it); read by "
            "profiles.example.yml", "knowledge base"),
    Setting("DBROUTER_SOURCE_MEMORY_LIMIT", "2GB", "DuckDB's memory for reading a DuckDB source file", "sources"),
    Setting("DBROUTER_INGEST_STATEMENT_TIMEOUT", "30", "seconds one query on a SQLite or DuckDB source may take "
            "while counting rows and sampling values", "sources"),
    Setting("DBROUTER_INGEST_DATABASE_TIMEOUT", "300", "seconds all such queries of one database may take",
            "sources"),
    Setting("DBROUTER_KEPT_ANSWERS", "1024", "answers a held routing query keeps for a question asked again, per "
            "connection (`dbrouter.route()`, a `dbrouter.connect()` connection's plain `route_query`) and per "
            "`dbrouter serve` opening of the file (`0`: none kept, every call routed; adr-0038)", "knowledge base"),
    Setting("DBROUTER_LOG", None, "the query log journal (default `<warehouse stem>.query_log.jsonl` beside the "
            "warehouse); `off`, `0`, `false` or `no` turns logging off", "query log"),
    Setting("DBROUTER_ENDPOINT", None, "a running `dbrouter serve` (`postgresql://user@host:port/db`) that "
            "`dbrouter route` asks instead of opening the warehouse", "serve"),
    Setting("DBROUTER_PASSWORD", None, "the password `dbrouter serve --user` checks against the access policy",
            "serve", verbatim=True),
    Setting("DBROUTER_LLM_BASE_URL", None, "an OpenAI-compatible endpoint; unset, nothing calls an LLM", "LLM"),
    Setting("DBROUTER_LLM_MODEL", "gpt-4o-mini", "the model asked", "LLM"),
    Setting("DBROUTER_LLM_API_KEY", "not-needed", "the API key sent", "LLM", verbatim=True),
    Setting("DBROUTER_LLM_TIMEOUT", "30", "seconds one call may take", "LLM"),
    Setting("DBROUTER_LLM_CACHE", ".dbrouter/llm-cache", "the folder of cached answers (by prompt hash)", "LLM"),
    Setting("DBROUTER_LLM_BUDGET", "120", "seconds all LLM calls of one command may take together (`0` or `none`: "
            "no limit)", "LLM"),
    Setting("DBROUTER_LLM_CONCURRENCY", "4", "calls one step may have in flight at once", "LLM"),
    Setting("DBROUTER_ASK_SQL_BUDGET", "120", "seconds all SQL executions of one `dbrouter ask` may take together",
            "LLM"),
    Setting("DBROUTER_BENCHMARK", None, "the benchmark folder `dbrouter eval` reads when it gets no `--benchmark` "
            "(nothing else reads it)", "eval"),
    Setting("DBROUTER_EVAL_SERVE_PASSWORD", None, "set by `dbrouter eval serve` for the server it starts (internal)",
            "eval"),
)
"""The variables, by topic."""

BY_NAME = {s.name: s for s in SETTINGS}


def env(name: str) -> str | None:
    """What the environment sets a variable to, None when it is unset or blank (defaults not applied).

    Args:
        name: a name of :data:`SETTINGS`.

    Returns:
        The value (stripped of surrounding space unless the setting is ``verbatim``), or None.

    Raises:
        KeyError: ``name`` is not in :data:`SETTINGS` (a programming error: list it there).
    """
    setting = BY_NAME[name]
    raw = os.environ.get(name, "")
    if not raw.strip():
        return None
    return raw if setting.verbatim else raw.strip()


def get(name: str) -> str | None:
    """A variable's value (:func:`env`), or its default when it is unset or blank.

    Args:
        name: a name of :data:`SETTINGS`.

    Returns:
        The value, the default, or None.

    Raises:
        KeyError: ``name`` is not in :data:`SETTINGS`.
    """
    value = env(name)
    return value if value is not None else BY_NAME[name].default


def default_seconds(name: str) -> float:
    """A seconds setting's default, as a number (for the constants the docs and bounds name).

    Args:
        name: a name of :data:`SETTINGS` whose default is a number.

    Returns:
        The default.
    """
    return float(BY_NAME[name].default or "nan")


def seconds(name: str, error: type[DbrouterError] = DbrouterError) -> float:
    """A positive number of seconds from a variable (its default when unset or blank).

    Args:
        name: a name of :data:`SETTINGS` whose default is a positive number.
        error: the error raised for a malformed value.

    Returns:
        The seconds.

    Raises:
        error: the value is not a positive number.
    """
    value = get(name)
    try:
        number = float(value) if value is not None else 0.0
    except ValueError:
        number = 0.0
    if not number > 0:
        raise error(f"{name} must be a positive number of seconds, not {value!r}")
    return number


def limit(name: str, error: type[DbrouterError] = DbrouterError) -> float | None:
    """A limit from a variable (its default when unset or blank) where ``0``, ``none`` or ``off``, or
    any number not above 0, means "no limit".

    Args:
        name: a name of :data:`SETTINGS`.
        error: the error raised for a value that is not a number.

    Returns:
        The limit, or None for no limit.

    Raises:
        error: the value is not a number.
    """
    raw = (get(name) or "").lower()
    if raw in ("0", "none", "off"):
        return None
    try:
        value = float(raw)
    except ValueError:
        raise error(f"{name}={raw!r} is not a number of seconds (e.g. 120, or 0 for no limit)") from None
    return value if value > 0 else None


def count(name: str, error: type[DbrouterError] = DbrouterError) -> int:
    """A count from a variable (its default when unset or blank): a whole number, 0 or more.

    Args:
        name: a name of :data:`SETTINGS` whose default is a whole number.
        error: the error raised for a malformed value.

    Returns:
        The count.

    Raises:
        error: the value is not a whole number of at least 0.
    """
    value = get(name)
    if value is None or not (value.isascii() and value.isdigit()):  # "²" is a digit int() refuses
        raise error(f"{name} must be a whole number (0 or more), not {value!r}")
    return int(value)


def configuration_markdown() -> str:
    """docs/configuration.md: every variable with its default, by topic.

    Returns:
        The Markdown text.
    """
    lines = ["# Configuration", "",
             "Every environment variable dbrouter reads (generated from `dbrouter/settings.py` by "
             "`python -m dbrouter.settings > docs/configuration.md`; a test keeps it current). A variable set "
             "to an empty or blank value counts as unset.", ""]
    for topic in dict.fromkeys(s.topic for s in SETTINGS):
        lines += [f"## {topic[0].upper()}{topic[1:]}", "", "| variable | default | what it does |", "|---|---|---|"]
        lines += [f"| `{s.name}` | {f'`{s.default}`' if s.default is not None else '-'} | {s.help} |"
                  for s in SETTINGS if s.topic == topic]
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(configuration_markdown(), end="")
