"""dbrouter.sources.url without a server: URL secrets, redaction, and the SQL each dialect gets
(MySQL/MariaDB and SQL Server through SQLAlchemy's dialect compilation; PostgreSQL runs for real
in tests/functional/test_postgres_source.py)."""

from __future__ import annotations

import pytest

from dbrouter.errors import SourceError
from dbrouter.redaction import expand_url, literal_secrets, redact
from dbrouter.sources.url import ServerSource, read_server, sample_query, session_guards


def test_expand_url_quotes_values_and_names_missing_variables():
    url = "postgresql://reader:${PW}@${HOST}:5432/sales"
    assert expand_url(url, {"PW": "a@b/c d", "HOST": "db.internal"}) == \
        "postgresql://reader:a%40b%2Fc%20d@db.internal:5432/sales"
    with pytest.raises(SourceError, match="PW, HOST .*not set"):
        expand_url(url, {})


def test_redact_keeps_references_and_masks_literal_passwords():
    assert redact("postgresql://reader:${PW}@h/db") == "postgresql://reader:${PW}@h/db"
    assert redact("mysql+pymysql://root:hunter2@h:3306/db") == "mysql+pymysql://root:***@h:3306/db"
    assert "hunter2" not in redact("not a url://root:hunter2@h/db")


@pytest.mark.parametrize("url, shown", [
    # issue 22 finding 5: a password in the query string or holding '/' or '@' was shown in full
    ("postgresql://reader@h/db?password=hunter2&sslmode=require", "postgresql://reader@h/db?password=***&sslmode=require"),
    ("postgresql://reader:hun/ter2@h/db", "postgresql://reader:***@h/db"),
    ("postgresql://reader:hun@ter2@h/db", "postgresql://reader:***@h/db"),
    ("snowflake://me@acct/db?private_key_file_pwd=abc&warehouse=w", "snowflake://me@acct/db?private_key_file_pwd=***&warehouse=w"),
    ("http://user:sk-tok@127.0.0.1:8000/v1", "http://user:***@127.0.0.1:8000/v1"),
    ("http://127.0.0.1:8000/v1?api_key=sk-123", "http://127.0.0.1:8000/v1?api_key=***"),
    ("mysql://reader@h/db?passwd=${PW}", "mysql://reader@h/db?passwd=${PW}"),
])
def test_redact_masks_every_credential(url, shown):
    assert redact(url) == shown


SQLALCHEMY_READINGS = [
    # hardening review: the redaction split the URL at the first '?', SQLAlchemy reads the password
    # up to '@', so a '?' in a password was stored in kb_databases and printed in errors
    ("postgresql://postgres:Sup3r/Secret?pw@host:5432/db", "Sup3r/Secret?pw", "postgresql://postgres:***@host:5432/db"),
    ("postgresql://u:a#b?c@h/db?sslmode=require", "a#b?c", "postgresql://u:***@h/db?sslmode=require"),
    # credentials inside a parameter's value, or in a parameter named auth
    ("mssql+pyodbc:///?odbc_connect=DRIVER%3D%7BODBC%7D%3BSERVER%3Dh%3BUID%3Du%3BPWD%3Dodbc-pw", "odbc-pw",
     "mssql+pyodbc:///?odbc_connect=***"),
    ("oracle+oracledb://u@/?dsn=(DESCRIPTION=(ADDRESS=(HOST=h))(PASSWORD=ora-pw))", "ora-pw",
     "oracle+oracledb://u@/?dsn=***"),
    ("trino://u@h:8080/cat?auth=Basic%20dXNlcjpwdw", "dXNlcjpwdw", "trino://u@h:8080/cat?auth=***"),
]


@pytest.mark.parametrize("url, secret, shown", SQLALCHEMY_READINGS)
def test_one_parser_reads_the_password_for_the_check_and_the_mask(url, secret, shown):
    from sqlalchemy.engine import make_url

    from dbrouter.sources.url import source_location

    assert redact(url) == shown and secret not in redact(url)
    assert secret not in source_location(url, "other") and "/other" in source_location(url, "other")
    assert literal_secrets(url), url
    parsed = make_url(url)  # what connecting reads: the same password the mask hid
    assert parsed.password is None or str(parsed.password) == secret


def test_text_that_is_not_a_url_is_not_echoed():
    assert redact("my password is hunter2") == "*** (not a URL)"
    assert "hunter2" not in redact("postgresql//u:hunter2@h")


@pytest.mark.parametrize("url, found", [
    ("postgresql://reader@h/db?password=hunter2", ["query parameter password"]),
    ("postgresql://reader:hun/ter2@h/db", ["the password"]),
    ("mssql+pyodbc://u@dsn?pwd=x&authentication=ActiveDirectoryPassword", ["query parameter pwd"]),
    ("postgresql://u@h/db?sslkey=/etc/k.pem&sslcert=/etc/c.pem", []),
    ("postgresql://reader:${PW}@h/db?sslpassword=${KEYPW}&sslmode=require", []),
    ("postgresql://reader@h/db", []),
])
def test_literal_secrets_reads_the_url_as_sqlalchemy_does(url, found):
    assert literal_secrets(url) == found


def _compiled(dialect) -> str:
    q = sample_query("Order Items", "sales", "unit price", 5)
    return str(q.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def test_sample_query_per_dialect():
    from sqlalchemy.dialects import mssql, mysql, postgresql

    my = _compiled(mysql.dialect())
    assert "FROM sales.`Order Items`" in my and "`unit price` IS NOT NULL" in my
    assert "LIMIT 10000" in my and my.rstrip().endswith("LIMIT 15") and "SELECT DISTINCT" in my
    pg = _compiled(postgresql.dialect())
    assert 'sales."Order Items"' in pg and pg.rstrip().endswith("LIMIT 15")
    ms = _compiled(mssql.dialect())
    assert "TOP 15" in ms and "TOP 10000" in ms and "[Order Items]" in ms


def test_mysql_sessions_are_guarded_read_only():
    assert session_guards("mysql")[0] == "SET SESSION TRANSACTION READ ONLY"
    assert "MAX_EXECUTION_TIME" in session_guards("mysql")[1]
    assert "READ ONLY" in session_guards("postgresql")[0]


def test_unreachable_mysql_server_is_one_error_without_the_password():
    snaps, issues = read_server(ServerSource(url="mysql+pymysql://root:${PW}@127.0.0.1:1/shop",
                                             env={"PW": "s3cret-value"}), 3, 60)
    assert snaps == [] and len(issues) == 1 and issues[0].severity == "error"
    assert "mysql+pymysql://root:${PW}@127.0.0.1:1/shop" in issues[0].message
    assert "s3cret-value" not in issues[0].message and "left out" in issues[0].message


def test_missing_driver_says_what_to_install():
    snaps, issues = read_server(ServerSource(url="mssql+pyodbc://u@h/db", env={}), 3, 60)
    assert snaps == [] and len(issues) == 1
    assert "No module named 'pyodbc'" in issues[0].message and "pip install" in issues[0].message


def _silent_server(speak_first: bool):
    """A loopback listener that, with ``speak_first``, completes a PostgreSQL handshake (no password)
    and then never answers again; without it, never says anything (a MySQL client waits for the
    server's greeting). Returns (port, stop)."""
    import socket
    import struct
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held, stop = [], threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)
            if not speak_first:
                continue
            conn.settimeout(5)
            while True:  # SSL/GSS requests get 'N', then the startup message
                size, code = struct.unpack("!ii", conn.recv(8, socket.MSG_WAITALL))
                if code in (80877103, 80877104):
                    conn.sendall(b"N")
                    continue
                conn.recv(size - 8, socket.MSG_WAITALL)
                break
            conn.sendall(b"R" + struct.pack("!ii", 8, 0) + b"Z" + struct.pack("!i", 5) + b"I")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    def close():
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()

    return listener.getsockname()[1], close



def _read_silent(driver: str, source_id: str, speak_first: bool):
    """Ingest from a local server that goes silent; (snapshots, issues, seconds taken)."""
    import time

    port, close = _silent_server(speak_first=speak_first)
    try:
        started = time.monotonic()
        snaps, issues = read_server(ServerSource(url=f"{driver}://u@127.0.0.1:{port}/db", id=source_id), 0, 0)
        return snaps, issues, time.monotonic() - started
    finally:
        close()

def test_a_server_that_goes_silent_after_the_handshake_is_cut_off(monkeypatch):
    """Hardening review: a PostgreSQL server that completed the handshake and then went silent hung
    ingest past the documented 120 s (socket options need a server that answers): the watchdog
    closes the connection when no statement has finished for READ_TIMEOUT_S."""

    import dbrouter.sources.url as url_mod

    monkeypatch.setattr(url_mod, "READ_TIMEOUT_S", 1.5)
    snaps, issues, elapsed = _read_silent("postgresql+psycopg", "quiet", speak_first=True)
    assert snaps == [] and len(issues) == 1 and "stopped answering" in issues[0].message, issues
    assert elapsed < 10


def test_a_mysql_listener_that_never_speaks_fails_after_the_connect_timeout(monkeypatch):
    """Hardening review: a MySQL listener that never sent its greeting took 120 s (the documented
    connect timeout is 10 s): the handshake now reads with the connect timeout."""

    pytest.importorskip("pymysql")
    import dbrouter.sources.url as url_mod

    monkeypatch.setattr(url_mod, "CONNECT_TIMEOUT_S", 1)
    snaps, issues, elapsed = _read_silent("mysql+pymysql", "mute", speak_first=False)
    assert snaps == [] and len(issues) == 1 and issues[0].severity == "error", issues
    assert elapsed < 8
