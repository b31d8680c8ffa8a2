"""A real PostgreSQL server for the tests: initdb + pg_ctl from the machine's Debian packages, in a
temporary directory, listening on a free loopback port, run as the `postgres` user when the tests
run as root (PostgreSQL refuses to run as root). Stopped and deleted afterwards."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PgServer:
    host: str
    port: int
    password: str  # of the superuser `postgres`
    directory: Path

    def dsn(self, user: str = "postgres", password: str | None = None, database: str = "postgres") -> str:
        """A psycopg DSN for ``user``."""
        pw = self.password if password is None else password
        return f"host={self.host} port={self.port} user={user} password={pw} dbname={database}"


def pg_bin(name: str) -> str:
    """Path of a PostgreSQL server binary (initdb, pg_ctl), or a clear error."""
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise RuntimeError(f"{name} not found: the PostgreSQL tests need the server binaries "
                           "(Debian: apt-get install postgresql)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str], what: str) -> None:
    """Run a server command; on failure raise with its own words (disk full, shared memory...)
    and the free space of the temporary directory, which a bare CalledProcessError hides."""
    done = subprocess.run(_as_server_user(cmd), capture_output=True, text=True)
    if done.returncode:
        free = shutil.disk_usage(tempfile.gettempdir()).free // 2**20
        raise RuntimeError(f"{what} failed (exit {done.returncode}, {free} MiB free in "
                           f"{tempfile.gettempdir()}):\n{(done.stderr or done.stdout)[-2000:]}")


@contextlib.contextmanager
def postgres_server() -> Iterator[PgServer]:
    """Start a throw-away PostgreSQL server; yields its address and superuser password."""
    directory = Path(tempfile.mkdtemp(prefix="dbrouter-pg-"))
    password = secrets.token_hex(8)
    (directory / "pw").write_text(password + "\n")
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres")
        shutil.chown(directory / "pw", "postgres")
    data, port = directory / "data", _free_port()
    try:
        _run([pg_bin("initdb"), "-D", str(data), "-U", "postgres", f"--pwfile={directory / 'pw'}",
              "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-locale"], "initdb")
        _run([pg_bin("pg_ctl"), "-D", str(data), "-l", str(directory / "log"), "-w",
              "-o", f"-p {port} -k {directory} -c listen_addresses=127.0.0.1", "start"], "pg_ctl start")
        yield PgServer("127.0.0.1", port, password, directory)
    finally:
        subprocess.run(_as_server_user([pg_bin("pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                       capture_output=True, text=True)
        shutil.rmtree(directory, ignore_errors=True)
