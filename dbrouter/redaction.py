"""Secrets in URLs, in one place: ``${NAME}`` references and their expansion, what counts as a
credential, and masking it in everything printed, logged or stored.

Used by the ``url`` and Snowflake sources (the URLs of a sources file) and the LLM client
(``DBROUTER_LLM_BASE_URL``). A URL is read with SQLAlchemy's own parser, the one connecting uses,
so what is masked is what would be sent.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

from dbrouter.errors import SourceError

ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``${NAME}`` reference to an environment variable in a URL."""


def env_names(url: str) -> list[str]:
    """The environment variables a URL refers to (``${NAME}``), in order."""
    return ENV_REF.findall(url)


def expand_url(url: str, env: Mapping[str, str] | None = None) -> str:
    """Substitute ``${NAME}`` references, URL-quoting each value.

    Args:
        url: the URL as written in the sources file.
        env: the environment (default ``os.environ``).

    Returns:
        The URL to connect with (never to be printed or stored).

    Raises:
        SourceError: a referenced variable is not set.
    """
    values: Mapping[str, str] = os.environ if env is None else env
    missing = [n for n in env_names(url) if n not in values]
    if missing:
        raise SourceError(redact(url), f"environment variable(s) {', '.join(missing)} named in the source URL "
                          "are not set: export them before `dbrouter ingest/build/refresh`")
    return ENV_REF.sub(lambda m: urllib.parse.quote(values[m[1]], safe=""), url)


SECRET_PARAM = re.compile(r"pass|pwd|secret|token|credential|api_?key|access_?key|^auth$|authori[sz]ation",
                          re.IGNORECASE)
"""Query-string parameters of a URL that carry credentials (``password=``, ``sslpassword=``,
``private_key_file_pwd=``, ``access_token=``, ``api_key=``, ``auth=``, ...): masked in every
message, refused in a sources file. Paths to key files (``sslkey=``, ``private_key_file=``) and
method names (``authentication=``) are not secrets."""

SECRET_ASSIGNMENT = re.compile(r"(?:pass(?:word)?|pwd|secret|token|api_?key)\s*=", re.IGNORECASE)
"""A credential inside a parameter's value: ODBC's ``odbc_connect=...;PWD=x``, an Oracle
``dsn=(...(PASSWORD=x))``: the whole value is masked, and refused in a sources file."""

_MASK = "DBROUTERMASKED"


def _parse(url: str):
    """``url`` read by SQLAlchemy's own parser (what connecting will read), ``${NAME}`` references
    replaced by tokens first; returns (the ``sqlalchemy.engine.URL`` or None when it is not a
    database URL, token -> reference)."""
    from sqlalchemy.engine import make_url

    refs: dict[str, str] = {}

    def token(match: re.Match) -> str:
        key = f"DBROUTERENV{len(refs)}X"
        refs[key] = match[0]
        return key

    try:
        return make_url(ENV_REF.sub(token, url)), refs
    except Exception:  # noqa: BLE001 - sqlalchemy.exc.ArgumentError and friends: not a database URL
        return None, refs


def _secret_value(name: str, value: str, refs: dict[str, str]) -> bool:
    if not value or value in refs:
        return False
    return bool(SECRET_PARAM.search(name) or SECRET_ASSIGNMENT.search(value))


def _literal_password(parsed, refs: dict[str, str]) -> bool:
    return parsed.password is not None and str(parsed.password) != "" and str(parsed.password) not in refs


def redact(url: str, database: str | None = None) -> str:
    """The URL with every literal credential masked: the password (as SQLAlchemy reads it: up to
    the first ``@``, ``/`` and ``?`` included), each :data:`SECRET_PARAM` query parameter and any
    parameter whose value assigns a password (``odbc_connect``, an Oracle ``dsn``); ``${NAME}``
    references are kept. Text that is not a database URL is not echoed.

    Args:
        url: a URL (a database URL, an LLM base URL).
        database: a database to put in place of the URL's own (None: keep it).

    Returns:
        The URL fit to print, log and store.
    """
    parsed, refs = _parse(url)
    if parsed is None:
        scheme = re.match(r"^([A-Za-z][A-Za-z0-9+.\-]*)://", url)
        return f"{scheme[1]}://*** (not a URL SQLAlchemy reads)" if scheme else "*** (not a URL)"
    if parsed.host and "@" in parsed.host:  # 'p@ss' unquoted: SQLAlchemy reads 'ss@host' as the host; mask both readings
        parsed = parsed.set(host=parsed.host.rsplit("@", 1)[1], password=_MASK)
    elif _literal_password(parsed, refs):
        parsed = parsed.set(password=_MASK)
    query = {}
    for name, value in parsed.query.items():
        values = value if isinstance(value, tuple) else (value,)
        masked = tuple(_MASK if _secret_value(name, v, refs) else v for v in values)
        query[name] = masked if isinstance(value, tuple) else masked[0]
    parsed = parsed.set(query=query)
    if database:
        parsed = parsed.set(database=database)
    text = parsed.render_as_string(hide_password=False).replace(_MASK, "***")
    for key, ref in refs.items():
        text = text.replace(key, ref)
    return text


def literal_secrets(url: str) -> list[str]:
    """Where a URL holds a credential written out rather than as a ``${NAME}`` reference.

    Reads the URL as SQLAlchemy will (the parser that connecting uses), and its query string.

    Args:
        url: the URL as written in the sources file.

    Returns:
        Descriptions (``the password``, ``query parameter password``), empty when it holds none.
    """
    parsed, refs = _parse(url)
    if parsed is None:
        # not a database URL (it fails later with its own message): a '@' after ':' may be a password
        return ["the password"] if re.match(r"^[^:/]+://[^/]*:[^@]*@", url) else []
    found = ["the password"] if _literal_password(parsed, refs) or "@" in (parsed.host or "") else []
    for name, value in parsed.query.items():
        values = value if isinstance(value, tuple) else (value,)
        if any(_secret_value(name, v, refs) for v in values):
            found.append(f"query parameter {name}")
    return found


def scrub(message: str, secrets: list[str]) -> str:
    """``message`` (a driver's error) with each secret value, plain or URL-quoted, masked, on one line."""
    for s in secrets:
        if s:
            message = message.replace(s, "***").replace(urllib.parse.quote(s, safe=""), "***")
    return " ".join(message.split())
