"""The package's shape: no import cycles (function-local imports included), python_udfs a leaf,
stages importing only earlier stages, and docs/layout.md listing exactly the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("dbrouter", "python_udfs")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports, at top level or inside a function (not under TYPE_CHECKING)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and target.split(".")[0] in PACKAGES:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles_even_through_function_local_imports():
    assert _cycles(import_graph()) == []


def test_python_udfs_imports_nothing_of_dbrouter():
    graph = import_graph()
    assert {m: sorted(t for t in ts if t.startswith("dbrouter")) for m, ts in graph.items()
            if m.startswith("python_udfs") and any(t.startswith("dbrouter") for t in ts)} == {}


STAGES: list[tuple[str, ...]] = [
    ("python_udfs",),
    ("dbrouter.errors", "dbrouter.console", "dbrouter.textin", "dbrouter.settings", "dbrouter.redaction",
     "dbrouter.connection"),
    ("dbrouter.access",),
    ("dbrouter.query",),
    ("dbrouter.sources",),
    ("dbrouter.llm",),
    ("dbrouter.feedback",),
    ("dbrouter.kb",),
    ("dbrouter",),
    ("dbrouter.routing", "dbrouter.retrieval"),
    ("dbrouter.enrich",),
    ("dbrouter.execute",),
    ("dbrouter.linking",),
    ("dbrouter.answer",),
    ("dbrouter.serve",),
    ("dbrouter.eval", "dbrouter.tune"),
    ("dbrouter.cli",),
]
"""The pipeline, earliest first (docs/layout.md): a module imports only its own stage and earlier
ones. ``dbrouter`` alone is the package's front door (``dbrouter.connect``); the query log
(feedback) comes before kb because builds load its journal."""


def stage_of(module: str) -> int:
    """The index in :data:`STAGES` of the longest prefix naming ``module``'s stage."""
    best, found = -1, None
    for i, names in enumerate(STAGES):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    assert found is not None, f"{module} is in no stage of STAGES"
    return found


def test_stages_import_only_earlier_stages():
    graph = import_graph()
    backwards = sorted(f"{m} -> {t}" for m, targets in graph.items() for t in targets if stage_of(t) > stage_of(m))
    assert backwards == [], "imports from a later stage (move the shared code down a stage): " + "; ".join(backwards)


def _expand(pattern: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    return [p for alt in m[1].split(",") for p in _expand(pattern[:m.start()] + alt + pattern[m.end():])]


def _layout_paths() -> set[str]:
    text = (ROOT / "docs" / "layout.md").read_text()
    block = text.split("```text", 1)[1].split("```", 1)[0]
    paths: set[str] = set()
    for line in block.strip().splitlines():
        head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        for item in head.split(", "):
            paths.update(_expand(item.strip()))
    return paths


def test_readme_layout_lists_exactly_the_tree():
    listed = _layout_paths()
    gone = sorted(p for p in listed if not (ROOT / p).exists())
    assert gone == [], f"docs/layout.md lists paths that do not exist: {gone}"
    modules = {str(p.relative_to(ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")
               if p.name != "__init__.py"}
    folders = {f"{p.relative_to(ROOT)}/" for base in ("models/marts", "models/staging", "macros")
               for p in (ROOT / base).iterdir() if p.is_dir()}
    folders |= {"macros/routing/steps/", "models/intermediate/"}
    covered = {p for p in listed if not p.endswith("/")} | {p for p in listed if p.endswith("/")}
    missing = sorted((modules | folders) - covered)
    assert missing == [], f"docs/layout.md does not list: {missing}"


def test_error_classes_live_in_dbrouter_errors():
    """Every subclass of dbrouter's errors is defined in dbrouter/errors.py (the hierarchy is its docstring)."""
    import dbrouter.errors as errors

    ours = {name for name, obj in vars(errors).items() if isinstance(obj, type) and issubclass(obj, Exception)}
    elsewhere = []
    for name, path in _modules().items():
        if name == "dbrouter.errors" or not name.startswith("dbrouter"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[-1] in ours for b in node.bases):
                elsewhere.append(f"{name}.{node.name}")
    assert elsewhere == [], f"define these in dbrouter/errors.py: {elsewhere}"
    assert all(cls in errors.__doc__ for cls in ours - {"EmbedderUnavailable"}), "list every class in the hierarchy"
