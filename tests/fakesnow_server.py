"""A fakesnow server (Snowflake emulated over DuckDB) for the Snowflake tests.

fakesnow pins its own sqlglot, so ``make setup`` installs it in a separate virtualenv,
``.venv-fakesnow`` (override with ``$DBROUTER_FAKESNOW_PYTHON``); the server runs there and the
tests talk to it over HTTP with snowflake-connector-python and dbt-snowflake from the main venv.
A missing install fails the test (never skips it).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER, PASSWORD = "fake", "snow-secret-not-logged"


def fakesnow_python() -> Path:
    """The Python of the fakesnow virtualenv; fails the test with the fix when it is missing."""
    found = Path(os.environ.get("DBROUTER_FAKESNOW_PYTHON") or ROOT / ".venv-fakesnow" / "bin" / "python")
    if not found.is_file():
        pytest.fail(f"fakesnow is not installed ({found} missing): run `make setup`, which creates .venv-fakesnow")
    return found


def require_snowflake_clients() -> None:
    """Fail (not skip) when the main venv lacks the Snowflake extra."""
    try:
        import dbt.adapters.snowflake  # noqa: F401
        import snowflake.connector  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"the Snowflake extra is not installed ({exc}): run `make setup`")


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_fakesnow(log_dir: Path) -> Iterator[dict]:
    """Start ``python -m fakesnow -s`` on a free port; yield its connection settings; stop it.

    Args:
        log_dir: where the server's output goes (``fakesnow.log``), shown when it does not start.
    """
    require_snowflake_clients()
    port = _free_port()
    log = log_dir / "fakesnow.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(fakesnow_python()), "-m", "fakesnow", "-s", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            with contextlib.closing(socket.socket()) as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"fakesnow server did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        yield {"host": "127.0.0.1", "port": port, "protocol": "http", "account": "fakesnow",
               "user": USER, "password": PASSWORD}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def connect(server: dict, **kwargs):
    """A snowflake-connector connection to the fakesnow server."""
    import snowflake.connector

    return snowflake.connector.connect(
        **server, session_parameters={"CLIENT_OUT_OF_BAND_TELEMETRY_ENABLED": False}, network_timeout=30, **kwargs)


def env_for(server: dict, database: str, schema: str = "KB") -> dict[str, str]:
    """``SNOWFLAKE_*`` variables pointing dbrouter and the profile at the server."""
    return {"SNOWFLAKE_ACCOUNT": server["account"], "SNOWFLAKE_USER": server["user"],
            "SNOWFLAKE_PASSWORD": server["password"], "SNOWFLAKE_HOST": server["host"],
            "SNOWFLAKE_PORT": str(server["port"]), "SNOWFLAKE_PROTOCOL": server["protocol"],
            "SNOWFLAKE_DATABASE": database, "SNOWFLAKE_SCHEMA": schema, "SNOWFLAKE_WAREHOUSE": "WH"}


PROFILE = """\
dbrouter:
  target: fakesnow
  outputs:
    fakesnow:  # the snowflake target of profiles.example.yml, pointed at the emulator
      type: snowflake
      account: "{{ env_var('SNOWFLAKE_ACCOUNT') }}"
      user: "{{ env_var('SNOWFLAKE_USER') }}"
      password: "{{ env_var('SNOWFLAKE_PASSWORD') }}"
      database: "{{ env_var('SNOWFLAKE_DATABASE') }}"
      warehouse: "{{ env_var('SNOWFLAKE_WAREHOUSE') }}"
      schema: "{{ env_var('SNOWFLAKE_SCHEMA') }}"
      host: "{{ env_var('SNOWFLAKE_HOST') }}"
      port: "{{ env_var('SNOWFLAKE_PORT') | int }}"
      protocol: "{{ env_var('SNOWFLAKE_PROTOCOL') }}"
      threads: 1
"""
