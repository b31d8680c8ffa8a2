"""Ship the dbt project inside the wheel (the rest of the metadata is in pyproject.toml).

`dbrouter build` runs dbt on dbt_project.yml, models/, macros/, seeds/, analyses/ and tests/dbt/.
In a checkout those are at the repository root (the design card's layout); an installed wheel
carries a copy of them as the package data folder ``dbrouter/dbt_project/``, which
:data:`dbrouter.kb.dbt_runner.PROJECT_DIR` prefers, the way dbt-duckdb ships its own project
inside its package. An editable install keeps reading the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# What dbt reads of the project: kept once, here (tests/unit/test_packaging.py checks it against
# dbt_project.yml's paths).
DBT_PROJECT_ITEMS = ("dbt_project.yml", "profiles.example.yml", "models", "macros", "seeds", "analyses", "tests/dbt")


class BuildWithDbtProject(build_py):
    """build_py that also copies the dbt project into ``<build_lib>/dbrouter/dbt_project``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        dest = Path(self.build_lib) / "dbrouter" / "dbt_project"
        shutil.rmtree(dest, ignore_errors=True)
        for item in DBT_PROJECT_ITEMS:
            src = ROOT / item
            if src.is_dir():
                shutil.copytree(src, dest / item, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                (dest / item).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest / item)


setup(cmdclass={"build_py": BuildWithDbtProject})
