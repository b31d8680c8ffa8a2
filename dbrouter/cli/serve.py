"""`dbrouter serve`: the KB over the Postgres wire protocol.

The server module is imported when the command runs: buenavista costs ~0.4 s of start-up that
no other command should pay."""

from __future__ import annotations

import argparse

from dbrouter import settings
from dbrouter.cli.common import add_warehouse, positive_int, warehouse_path
from dbrouter.console import err
from dbrouter.errors import DbrouterError
from dbrouter.feedback.log import log_path
from dbrouter.serve import MAX_CONNECTIONS, MAX_ROWS, RUNNING_PER_CORE


def cmd_serve(args) -> int:
    """`serve`: the knowledge base over the Postgres wire protocol until Ctrl-C."""
    from dbrouter.serve.endpoint import password_from_env
    from dbrouter.serve.server import ServeConfig, make_server

    policy = None
    if args.access:
        from dbrouter.access import load_policy

        if args.password_env:
            raise DbrouterError("--access gives every user a password of their own: drop --password-env")
        policy = load_policy(args.access)
        policy.check_passwords()
    config = ServeConfig(warehouse_path(args), args.host, args.port, password_from_env(args.password_env),
                         args.allow_remote, max_connections=args.max_connections, max_running=args.max_running,
                         max_rows=args.max_rows,
                         policy=policy, query_log=None if args.no_log else log_path(warehouse_path(args)))
    server = make_server(config)
    auth = ("each user of the access policy with their own password" if policy else
            f"password from ${args.password_env}" if config.password else "no password")
    host, port = server.server_address[:2]
    err(f"serving {config.warehouse} read-only on postgresql://{host}:{port} "
        f"({auth}); e.g. "
        f"psql -h {host} -p {port} -c \"select route_query('How many singers do we have?')\"; Ctrl-C stops")
    try:
        server.serve_forever()
    finally:
        server.server_close()
        server.kb.close()
    return 0


def cmd_mcp(args) -> int:
    """`mcp`: the knowledge base as an MCP server (stdio, or streamable HTTP with --http) until closed."""
    from dbrouter.llm import LLMClient
    from dbrouter.serve.endpoint import password_from_env
    from dbrouter.serve.mcp import McpConfig, run

    policy = user = None
    if args.access:

        from dbrouter.access import load_policy

        policy = load_policy(args.access)
        if not args.http:  # stdio: one user, who proves it with their password
            if not args.user:
                raise DbrouterError("--access over stdio needs --user NAME (and the user's password in "
                                    "$DBROUTER_PASSWORD)")
            if args.user in policy.users:
                policy.check_passwords([args.user])
            user = policy.authenticate(args.user, settings.env("DBROUTER_PASSWORD"))
        else:
            policy.check_passwords()
    elif args.user:
        raise DbrouterError("--user needs --access FILE (the policy that says what the user may see)")
    config = McpConfig(warehouse_path(args), http=args.http, host=args.host, port=args.port,
                       password=password_from_env(args.password_env), allow_remote=args.allow_remote,
                       policy=policy, user=user, log=not args.no_log)
    if not config.warehouse.is_file():
        raise DbrouterError(f"{config.warehouse} does not exist: build a knowledge base first (`make demo` or "
                            "`dbrouter build --sources FILE`), or pass --warehouse")
    run(config, LLMClient.from_env(), log=err)
    return 0



def _listen_options(sp: argparse.ArgumentParser, port: int, when: str, password_help: str, access_help: str) -> None:
    """--host, --port, --password-env, --allow-remote and --access, as serve and mcp share them."""
    sp.add_argument("--host", default="127.0.0.1", help=f"address to listen on{when} (default 127.0.0.1)")
    sp.add_argument("--port", type=int, default=port, help=f"port{when} (default {port})")
    sp.add_argument("--password-env", metavar="VAR", help=password_help)
    sp.add_argument("--allow-remote", action="store_true",
                    help="allow a non-loopback --host (needs --password-env or --access)")
    sp.add_argument("--access", metavar="FILE", help=f"access policy (YAML: users, their password variables and "
                    f"databases): {access_help}")
    sp.add_argument("--no-log", action="store_true", help="do not append the calls that route to the query log "
                    "(<warehouse stem>.query_log.jsonl, or $DBROUTER_LOG; docs/feedback.md)")


def register(sub: argparse._SubParsersAction) -> None:
    """``serve``."""
    sp = sub.add_parser("serve", help="serve the knowledge base read-only over the Postgres wire protocol "
                        "(psql, psycopg, BI tools); picks up a rebuilt warehouse without restart")
    add_warehouse(sp)
    _listen_options(sp, 5433, "", "require the password held in environment variable VAR (any user name)",
                    "each user logs in with their own password and sees only their databases, through the routing "
                    "and retrieval functions (docs/access.md)")
    sp.add_argument("--max-connections", type=positive_int, default=MAX_CONNECTIONS,
                    help=f"sessions at once; more get 'too many connections' (default {MAX_CONNECTIONS})")
    sp.add_argument("--max-running", type=positive_int, default=None, metavar="N",
                    help=f"statements running at once; the others wait their turn within the query timeout, a turn "
                    f"going to the waiting client that holds fewest (default {RUNNING_PER_CORE} per CPU core: "
                    "more only share the cores)")
    sp.add_argument("--max-rows", type=positive_int, default=MAX_ROWS,
                    help=f"rows of one result; more is an error asking for a LIMIT (default {MAX_ROWS:,})")
    sp.set_defaults(func=cmd_serve)

    sp = sub.add_parser("mcp", help="serve the knowledge base to agents as a Model Context Protocol server "
                        "(stdio; --http for streamable HTTP on loopback)")
    add_warehouse(sp)
    sp.add_argument("--http", action="store_true", help="streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    _listen_options(sp, 8765, " with --http",
                    "with --http, require 'Authorization: Bearer <password>' holding environment variable VAR",
                    "every call sees only the caller's databases; over HTTP each request authenticates with HTTP "
                    "Basic user:password")
    sp.add_argument("--user", help="with --access over stdio: the user this server answers for (password in "
                    "$DBROUTER_PASSWORD)")
    sp.set_defaults(func=cmd_mcp)
