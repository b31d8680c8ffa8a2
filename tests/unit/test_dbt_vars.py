"""The package's var defaults stand in dbt_project.yml and, for calls from a consuming project's
hooks (where dbt does not apply a package's vars), in macros/utils/get_var.sql: they must agree."""

from __future__ import annotations

import ast
import re

import yaml

from tests.conftest import ROOT


def _get_var_defaults() -> dict:
    text = (ROOT / "macros" / "utils" / "get_var.sql").read_text()
    body = re.search(r"set defaults = (\{.*?\}) -%\}", text, re.S)[1]
    return ast.literal_eval(body.replace("none", "None"))


def test_get_var_defaults_match_dbt_project_vars():
    project_vars = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]
    assert _get_var_defaults() == project_vars


def test_macros_read_package_vars_through_get_var():
    """A bare var('dbrouter__...') in a macro breaks when a consuming project's hook calls it."""
    offenders = [f"{p.relative_to(ROOT)}:{i}" for p in sorted((ROOT / "macros").rglob("*.sql"))
                 if p.name != "get_var.sql"
                 for i, line in enumerate(p.read_text().splitlines(), 1)
                 if re.search(r"(?<![.\w])var\(\s*['\"]dbrouter__", line)]
    assert offenders == []


def test_sql_functions_model_depends_on_every_table_the_functions_read():
    """kb_sql_functions' post-hooks create the routing functions, which read KB tables through
    kb_relation(...): each must be a declared parent, or dbt may run the hook before it exists
    (a build failed with 'Table kb_route_token_idf does not exist' when dbt scheduled it late)."""
    read = {name for p in (ROOT / "macros").rglob("*.sql")
            for name in re.findall(r"kb_relation\(\s*'([a-z_]+)'\s*\)", p.read_text())}
    model = (ROOT / "models" / "marts" / "functions" / "kb_sql_functions.sql").read_text()
    declared = set(re.findall(r"--\s*depends_on:\s*\{\{\s*ref\('([a-z_]+)'\)\s*\}\}", model))
    assert read, "no kb_relation(...) found in macros/"
    assert sorted(read - declared) == []


def test_the_fitted_ranker_file_is_exactly_what_the_tuner_writes():
    """macros/tuned/fitted_ranker.sql is generated (python -m dbrouter.tune.ranker --write): a hand
    edit, or a var of the fit set again in dbt_project.yml or get_var.sql, fails here."""
    from dbrouter.tune.ranker import FITTED, fitted_macro

    text = (ROOT / FITTED).read_text()
    value = ast.literal_eval(re.search(r"return\((\{.*\})\)", text)[1].replace("none", "None"))
    assert text == fitted_macro(value["weights"], value["abstain_below"])
    project_vars = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]
    for name in ("dbrouter__ranker_weights", "dbrouter__abstain_below"):
        assert name not in project_vars and name not in _get_var_defaults()


def test_lists_kept_in_sql_and_python_agree():
    """The ranker's signal names and the question length limit live in a macro/var and in Python:
    each side is checked against the other here."""
    from dbrouter.routing.ranker import SIGNALS
    from dbrouter.textin import MAX_QUESTION_CHARS

    macro = (ROOT / "macros" / "routing" / "steps" / "route_signals_step.sql").read_text()
    names = re.search(r"macro ranker_signal_names\(\) -%\}\s*\{\{ return\((\[.*?\])\) \}\}", macro, re.S)[1]
    assert ast.literal_eval(names) == list(SIGNALS)
    assert yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]["dbrouter__max_question_chars"] \
        == MAX_QUESTION_CHARS
