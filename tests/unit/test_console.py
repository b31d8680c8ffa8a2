"""console.shown: what the CLI echoes of user text."""

from __future__ import annotations

from dbrouter.console import shown


def test_shown_escapes_terminal_control_characters():
    assert shown("\x1b[31mred\x1b[0m singers?\r\x07") == "\\x1b[31mred\\x1b[0m singers?\\x0d\\x07"
    assert shown("tab\tand\nnewline, 歌手") == "tab\tand\nnewline, 歌手" and shown(None) == "None"


def test_library_progress_reaches_stderr_only_through_the_clis_handler(capsys, cli_handler):
    """The library logs per module; `dbrouter ...` (main) installs the handler that prints it."""
    import logging

    from dbrouter.console import install_handler

    logging.getLogger("dbrouter.kb.build").info("  read 25/50 sources")
    logging.getLogger("dbrouter.feedback.log").warning("dbrouter: the query log is full")
    install_handler()  # twice: still one line a record
    logging.getLogger("dbrouter.kb.refresh").info("fingerprinted")
    assert capsys.readouterr().err.splitlines() == ["  read 25/50 sources", "dbrouter: the query log is full",
                                                    "fingerprinted"]


def test_without_the_handler_a_library_user_sees_no_progress(capsys):
    import logging

    logging.getLogger("dbrouter.kb.build").info("  read 25/50 sources")
    assert "read 25/50" not in capsys.readouterr().err
