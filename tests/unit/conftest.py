"""Fixtures of the unit tests: small SQLite sources."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest


def make_sqlite_file(path: Path, *sql: str) -> Path:
    con = sqlite3.connect(path)
    for statement in sql:
        con.execute(statement)
    con.commit()
    con.close()
    return path


@pytest.fixture()
def sq(tmp_path) -> Path:
    return make_sqlite_file(tmp_path / "shop.sqlite",
                   "create table customer(id integer primary key, name text, city text)",
                   "create table orders(id integer primary key, customer_id int references customer(id), total real)",
                   "insert into customer values (1, 'Ada', 'Paris'), (2, 'Bob', 'Rome')",
                   "insert into orders values (1, 1, 9.5)")


@pytest.fixture
def cli_handler():
    """The CLI's stderr handler on the ``dbrouter`` loggers (:func:`dbrouter.console.install_handler`),
    removed again after the test."""
    import logging

    from dbrouter.console import install_handler

    logger = logging.getLogger("dbrouter")
    saved = (logger.level, list(logger.handlers), logger.propagate)
    install_handler()
    yield
    logger.setLevel(saved[0])
    logger.handlers[:] = saved[1]
    logger.propagate = saved[2]
