"""Where an endpoint (`dbrouter serve`, `dbrouter mcp` over HTTP) may listen, and its password.

Apart from the server so that the CLI and the MCP server check an address without loading the
Postgres protocol (buenavista and sqlglot, ~95 ms).
"""

from __future__ import annotations

import ipaddress
import os

from dbrouter.errors import ServeError


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip()).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool, password: str | None = None) -> None:
    """Refuse a non-loopback address unless ``--allow-remote`` was given, and remote clients without a password.

    Args:
        host: the address to listen on.
        allow_remote: ``--allow-remote``.
        password: the endpoint's password (None: none set).

    Raises:
        ServeError: ``host`` is not loopback and ``allow_remote`` is False, or ``allow_remote`` without a password.
    """
    if not allow_remote and not is_loopback(host):
        raise ServeError(f"--host {host} is not a loopback address: serving the knowledge base beyond this machine "
                         "needs --allow-remote (and set a password with --password-env VAR)")
    if allow_remote and not password:
        raise ServeError("--allow-remote needs a password: anyone who can reach the port would read the knowledge "
                         "base; export one and add --password-env VAR")


def password_from_env(var: str | None) -> str | None:
    """The password in environment variable ``var`` (None when no ``--password-env``).

    Raises:
        ServeError: ``var`` is named but unset or empty.
    """
    if not var:
        return None
    value = os.environ.get(var)
    if not value:
        raise ServeError(f"--password-env {var}: the environment variable {var} is unset or empty; "
                         f"export {var}=<password> first (the password is never taken from the command line)")
    return value
