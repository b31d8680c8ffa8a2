"""console.shown: what the CLI echoes of user text."""

from __future__ import annotations

from dbrouter.console import shown


def test_shown_escapes_terminal_control_characters():
    assert shown("\x1b[31mred\x1b[0m singers?\r\x07") == "\\x1b[31mred\\x1b[0m singers?\\x0d\\x07"
    assert shown("tab\tand\nnewline, 歌手") == "tab\tand\nnewline, 歌手" and shown(None) == "None"
