"""The command-line reference, docs/cli.md, generated from the parser (so it cannot drift from it).

``python -m dbrouter.cli.reference > docs/cli.md`` writes it; ``tests/unit/test_cli_reference.py``
fails when the file differs from what the parser says.
"""

from __future__ import annotations

import argparse
import functools

from dbrouter.cli.main import parser

WIDTH = 100
"""Columns of the help text (fixed: the terminal's width must not change the file)."""


def _subcommands(p: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser, str | None]]:
    """``(name, parser, help)`` of ``p``'s subcommands, in the order ``--help`` lists them."""
    out = []
    for action in p._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            out += [(name, sub, helps.get(name)) for name, sub in action.choices.items()]
    return out


def _walk(p: argparse.ArgumentParser, path: list[str]) -> list[tuple[list[str], argparse.ArgumentParser, str | None]]:
    out = []
    for name, sub, text in _subcommands(p):
        out.append(([*path, name], sub, text))
        out += _walk(sub, [*path, name])
    return out


def _help(p: argparse.ArgumentParser) -> str:
    p.formatter_class = functools.partial(argparse.HelpFormatter, width=WIDTH)  # type: ignore[assignment]
    return p.format_help().rstrip()


def reference_markdown() -> str:
    """docs/cli.md: every command's ``--help``, nested commands included.

    Returns:
        The Markdown text.
    """
    root = parser()
    commands = _walk(root, [])
    lines = ["# Command-line reference", "",
             "Generated from the parser by `python -m dbrouter.cli.reference > docs/cli.md` (a test keeps it "
             "current). The README's quickstart shows the commands at work; docs/commands.md sums them up.", "",
             "| command | what it does |", "|---|---|"]
    lines += [f"| [`dbrouter {' '.join(path)}`](#dbrouter-{'-'.join(path)}) | "
              f"{' '.join((text or '').split()).replace('|', '/')} |" for path, _, text in commands]
    lines += ["", "## dbrouter", "", "```text", _help(root), "```"]
    for path, sub, _ in commands:
        lines += ["", f"## dbrouter {' '.join(path)}", "", "```text", _help(sub), "```"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_markdown(), end="")
