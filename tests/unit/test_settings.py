"""dbrouter.settings: one table of the DBROUTER_* variables, read everywhere, documented."""

from __future__ import annotations

import re

import pytest

from dbrouter import settings
from dbrouter.errors import DbrouterError
from tests.conftest import ROOT

READS = re.compile(r"""(?:settings\.(?:get|env|seconds|limit|default_seconds)\(|environ\.get\(|environ\[|env_var\()\s*["'](DBROUTER_[A-Z0-9_]+)""")


def _files():
    for folder, pattern in (("dbrouter", "*.py"), ("python_udfs", "*.py"), ("models", "*.sql"), ("macros", "*.sql")):
        yield from (ROOT / folder).rglob(pattern)
    yield ROOT / "profiles.example.yml"
    yield ROOT / "dbt_project.yml"


def test_every_variable_the_code_reads_is_listed():
    read = {m for path in _files() for m in READS.findall(path.read_text())}
    assert {"DBROUTER_EMBEDDER", "DBROUTER_LLM_BASE_URL", "DBROUTER_BUILD_MEMORY_LIMIT"} <= read
    assert sorted(read - set(settings.BY_NAME)) == []


def test_dbrouter_reads_the_environment_only_through_settings():
    direct = [f"{path.relative_to(ROOT)}: {m}" for path in (ROOT / "dbrouter").rglob("*.py") if path.name != "settings.py"
              for m in re.findall(r"""(?:environ\.get\(|getenv\()\s*["'](DBROUTER_[A-Z0-9_]+)""", path.read_text())]
    assert direct == []


def test_docs_configuration_md_is_current():
    assert (ROOT / "docs" / "configuration.md").read_text() == settings.configuration_markdown(), (
        "docs/configuration.md is out of date: run `python -m dbrouter.settings > docs/configuration.md`")


def test_blank_means_unset_and_passwords_are_kept_verbatim(monkeypatch):
    monkeypatch.setenv("DBROUTER_LLM_MODEL", "   ")
    assert settings.env("DBROUTER_LLM_MODEL") is None and settings.get("DBROUTER_LLM_MODEL") == "gpt-4o-mini"
    monkeypatch.setenv("DBROUTER_LLM_MODEL", " m1 ")
    assert settings.get("DBROUTER_LLM_MODEL") == "m1"
    monkeypatch.setenv("DBROUTER_PASSWORD", " pw with spaces ")
    assert settings.get("DBROUTER_PASSWORD") == " pw with spaces "
    with pytest.raises(KeyError):
        settings.get("DBROUTER_NOT_A_SETTING")


def test_seconds_default_bad_value_and_unlimited(monkeypatch):
    monkeypatch.delenv("DBROUTER_LLM_TIMEOUT", raising=False)
    assert settings.seconds("DBROUTER_LLM_TIMEOUT") == 30.0
    monkeypatch.setenv("DBROUTER_LLM_TIMEOUT", "soon")
    with pytest.raises(DbrouterError, match="DBROUTER_LLM_TIMEOUT must be a positive number of seconds"):
        settings.seconds("DBROUTER_LLM_TIMEOUT")
    for no_limit in ("none", "off", "0", "-5"):
        monkeypatch.setenv("DBROUTER_LLM_BUDGET", no_limit)
        assert settings.limit("DBROUTER_LLM_BUDGET") is None
    monkeypatch.delenv("DBROUTER_LLM_BUDGET")
    assert settings.limit("DBROUTER_LLM_BUDGET") == 120.0
    monkeypatch.setenv("DBROUTER_LLM_BUDGET", "soon")
    with pytest.raises(DbrouterError, match="DBROUTER_LLM_BUDGET='soon' is not a number of seconds"):
        settings.limit("DBROUTER_LLM_BUDGET")


def test_the_constants_the_bounds_name_are_the_table_defaults():
    from dbrouter.answer.generate import SQL_BUDGET
    from dbrouter.llm import DEFAULT_CACHE
    from dbrouter.sources.base import INGEST_DATABASE_SECONDS, INGEST_STATEMENT_SECONDS
    from dbrouter.sources.duckdb import SOURCE_MEMORY_LIMIT

    assert settings.default_seconds("DBROUTER_ASK_SQL_BUDGET") == SQL_BUDGET
    assert settings.default_seconds("DBROUTER_INGEST_STATEMENT_TIMEOUT") == INGEST_STATEMENT_SECONDS
    assert settings.default_seconds("DBROUTER_INGEST_DATABASE_TIMEOUT") == INGEST_DATABASE_SECONDS
    assert settings.BY_NAME["DBROUTER_SOURCE_MEMORY_LIMIT"].default == SOURCE_MEMORY_LIMIT
    assert settings.BY_NAME["DBROUTER_LLM_CACHE"].default == DEFAULT_CACHE
