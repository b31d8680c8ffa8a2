"""`dbrouter eval serve`: a bounded load test of `dbrouter serve` with concurrent psycopg clients.

The endpoint runs in its own process (``python -m dbrouter.cli.main serve --port 0`` on loopback), as
in production, so clients and server do not share a GIL. The workload is the KB's own example
questions (``kb_examples``, in ``example_id`` order, cycled): each request is
``select route_query(%s)``; a request counts as correct when it names the example's database.
The same questions routed in-process (:func:`dbrouter.connect`, one connection) give the baseline
that shows what the wire and the server add.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbrouter.errors import DbrouterError
from dbrouter.eval.publish import Report
from dbrouter.serve import default_max_running

_LISTENING = re.compile(r"postgresql://([0-9.]+):(\d+)")
START_TIMEOUT = 120.0
MAX_CLIENTS = 64


@dataclass
class ServeLoad:
    """What one load test measured (milliseconds per request, requests per second)."""

    requests: int
    clients: int
    questions: int
    seconds: float
    throughput_rps: float
    p50_ms: float
    p95_ms: float
    max_ms: float
    errors: int
    correct: int
    inprocess_p50_ms: float
    inprocess_p95_ms: float
    embedder: str
    databases: int
    hostile: str = ""
    """With a hostile client present: what its statements got (e.g. ``4 refused, 2 finished``); empty without."""
    connect_each: bool = False
    """Each request opened its own connection (timed from the connect to the close)."""


def _percentiles(times: list[float]) -> tuple[float, float, float]:
    times = sorted(times)
    if not times:
        return 0.0, 0.0, 0.0
    return statistics.median(times), times[max(0, int(round(0.95 * len(times))) - 1)], times[-1]


def _workload(warehouse: Path) -> tuple[list[tuple[str, str]], list[float], str, int]:
    """The example questions with their databases, in-process latencies, the KB's embedder and size."""
    from dbrouter.kb.connect import connect, kb_embedders

    con = connect(warehouse)
    try:
        rows = con.execute("select question, db_id from kb_examples where question is not null "
                           "order by example_id").fetchall()
        if not rows:
            raise DbrouterError(f"{warehouse} has no example questions (kb_examples) to send: build it from a "
                                "sources file with examples, e.g. demo/sources.yml")
        embedder = (kb_embedders(con) or ["?"])[0]
        databases = con.execute("select count(*) from kb_databases").fetchone()[0]
        warm = rows[:min(5, len(rows) - 1)]  # not timed: a question asked again is a kept answer (adr-0038)
        for q, _ in warm:
            con.execute("select route_query(?)", [q]).fetchone()
        times = []
        for q, _ in rows[len(warm):]:
            t = time.perf_counter()
            con.execute("select route_query(?)", [q]).fetchone()
            times.append((time.perf_counter() - t) * 1000)
    finally:
        con.close()
    return rows, times, embedder, databases


def _start(warehouse: Path, password: str) -> tuple[subprocess.Popen, int]:
    """Start `dbrouter serve --port 0` and read the port it bound from its first line.

    Raises:
        DbrouterError: it exited or printed no address within START_TIMEOUT seconds.
    """
    # the workload cycles a few questions: with kept answers (adr-0038) most requests would be answered
    # without routing, and the load test measures routing under load
    env = {**os.environ, "DBROUTER_EVAL_SERVE_PASSWORD": password, "DBROUTER_KEPT_ANSWERS": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "dbrouter.cli.main", "serve", "--warehouse", str(warehouse),
                             "--host", "127.0.0.1", "--port", "0", "--password-env", "DBROUTER_EVAL_SERVE_PASSWORD"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    found: list[str] = []
    stderr = proc.stderr
    assert stderr is not None, "started with stderr=PIPE"
    reader = threading.Thread(target=lambda: found.append(stderr.readline()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    match = _LISTENING.search(found[0]) if found else None
    if not match:
        _stop(proc)
        raise DbrouterError(f"`dbrouter serve` did not start: {(found[0] if found else '').strip() or 'no output'}")
    return proc, int(match.group(2))


def _stop(proc: subprocess.Popen) -> None:
    """Stop the server process started by :func:`_start` (SIGINT, then SIGKILL after 10 s)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _connect(port: int, password: str, user: str = "eval"):
    """A psycopg connection to the endpoint on loopback (autocommit)."""
    import psycopg

    return psycopg.connect(host="127.0.0.1", port=port, user=user, dbname="kb", password=password,
                           autocommit=True, connect_timeout=30)


def _client(port: int, password: str, work: list[tuple[str, str]], next_index, results: list,
            connect_each: bool = False) -> None:
    """One client: its own connection (or, with ``connect_each``, one per request: what ``psql -c``
    and a BI tool without a connection pool do); takes request numbers until none are left."""
    import psycopg

    def request(ask, question: str, db_id: str) -> None:  # one timed request: (ms, routed to db_id, error)
        t = time.perf_counter()
        try:
            row = ask(question)
            results.append(((time.perf_counter() - t) * 1000, (row[0] if row else None) == db_id, None))
        except psycopg.Error as exc:
            results.append(((time.perf_counter() - t) * 1000, False, str(exc)))

    def ask_alone(question: str):  # the connect and the close timed with the query
        with _connect(port, password) as con:
            return con.execute("select route_query(%s)", [question]).fetchone()

    if connect_each:
        while (i := next_index()) is not None:
            question, db_id = work[i % len(work)]
            request(ask_alone, question, db_id)
        return
    with _connect(port, password) as con:
        con.execute("select route_query(%s)", [work[0][0]]).fetchone()  # warm-up, not timed
        while (i := next_index()) is not None:
            question, db_id = work[i % len(work)]
            request(lambda q: con.execute("select route_query(%s)", [q]).fetchone(), question, db_id)


HOSTILE = (
    # embeds a whole table: a build's work, and one such query held the GIL for a minute (issue 22)
    "select count(embed(document_text || ' ' || range)) from kb_documents, range(50)",
    # a CPU-heavy join DuckDB runs on its own threads (no GIL)
    "select count(*) from range(20000) a, range(20000) b where (a.range * 7 + b.range) % 1000003 = 0",
    # a result far over the endpoint's row and byte bounds
    "select repeat('x', 2000) as s from range(3000000)",
    # SQL in a string, which ran past the timeout (hardening review 2): refused
    "select * from json_execute_serialized_sql(json_serialize_sql('select count(*) from range(20000) a, "
    "range(20000) b'))",
    # embed() over 100k rows of 250 distinct texts, under the per-call cap (it took others' p50 to 29.5 s)
    "select count(embed((range % 250)::varchar)) from range(100000)",
)
"""What the hostile client of ``eval serve --hostile`` sends, in turn, while the others route."""


def _hostile(port: int, password: str, stop: threading.Event, outcomes: list[str]) -> None:
    """A client sending :data:`HOSTILE` statements until ``stop``; records how each ended."""
    import psycopg

    with _connect(port, password, user="hostile") as con:
        i = 0
        while not stop.is_set():
            try:
                con.execute(HOSTILE[i % len(HOSTILE)]).fetchall()
                outcomes.append("finished")
            except psycopg.Error:
                outcomes.append("refused")
            i += 1


def run_serve_load(warehouse: Path, requests: int = 200, clients: tuple[int, ...] = (1, 4, 16),
                   hostile: bool = False, connect_each: bool = False) -> list[ServeLoad]:
    """Serve ``warehouse`` on loopback and send ``requests`` route_query requests at each client count.

    One server process answers every level in turn (1 client, then 4, ...), so the levels differ
    only in concurrency; the first level is the yardstick of :func:`serve_report`'s ratios.

    Args:
        warehouse: a built KB with example questions.
        requests: requests per level (shared by its clients).
        clients: the concurrency levels; each client is its own psycopg connection in its own thread.
        hostile: run each level twice, the second time with one more client sending
            :data:`HOSTILE` statements throughout.
        connect_each: each request opens its own connection, sends its one query and closes it
            (the time counted from the connect to the close); the server is warmed first by five
            such requests.

    Returns:
        One :class:`ServeLoad` per level (and per level with the hostile client).

    Raises:
        DbrouterError: bad counts, no example questions, or the server did not start.
    """
    if requests < 1 or not clients or min(clients) < 1 or max(clients) > MAX_CLIENTS:
        raise DbrouterError(f"--requests ({requests}) must be at least 1 and --clients ({clients}) 1 to {MAX_CLIENTS}")
    work, inproc, embedder, databases = _workload(Path(warehouse))
    password = os.urandom(12).hex()
    proc, port = _start(Path(warehouse), password)
    ip50, ip95, _ = _percentiles(inproc)
    out = []
    try:
        if connect_each:  # what each client's own warm-up request does in the default mode
            warm = iter(range(5))
            _client(port, password, work, lambda: next(warm, None), [], connect_each=True)
        for n in clients:
            for with_hostile in ((False, True) if hostile else (False,)):
                out.append(_level(port, password, work, requests, n, with_hostile,
                                  dict(inprocess_p50_ms=round(ip50, 1), inprocess_p95_ms=round(ip95, 1),
                                       embedder=embedder, databases=databases, connect_each=connect_each)))
    finally:
        _stop(proc)
    return out


def _level(port: int, password: str, work: list[tuple[str, str]], requests: int, n: int, with_hostile: bool,
           fixed: dict) -> ServeLoad:
    """One load level: ``n`` clients share ``requests`` route_query requests (and a hostile client runs)."""
    lock, counter, results = threading.Lock(), iter(range(requests)), []

    def next_index():
        with lock:
            return next(counter, None)

    stop, outcomes = threading.Event(), []
    bad = threading.Thread(target=_hostile, args=(port, password, stop, outcomes), daemon=True) if with_hostile else None
    if bad is not None:
        bad.start()
        time.sleep(1.0)  # it is running before the others start
    threads = [threading.Thread(target=_client, args=(port, password, work, next_index, results, fixed["connect_each"]))
               for _ in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    stop.set()
    if bad is not None:
        bad.join(120)
    p50, p95, worst = _percentiles([r[0] for r in results])
    summary = ", ".join(f"{outcomes.count(k)} {k}" for k in ("refused", "finished") if outcomes.count(k))
    return ServeLoad(requests=len(results), clients=n, questions=len(work), seconds=round(seconds, 2),
                     throughput_rps=round(len(results) / seconds, 1), p50_ms=round(p50, 1), p95_ms=round(p95, 1),
                     max_ms=round(worst, 1), errors=sum(1 for r in results if r[2]),
                     correct=sum(1 for r in results if r[1]), hostile=summary if with_hostile else "", **fixed)


def serve_report(levels: list[ServeLoad], command: str) -> Report:
    """The measurements as a :class:`Report` (block ``eval serve``, or ``eval serve connect-each``), with
    each level's ratio to the first.

    Args:
        levels: :func:`run_serve_load`'s result.
        command: the command line to record.

    Returns:
        The report.
    """
    base = levels[0]
    rows = "".join(
        f"| {m.clients} | {m.hostile or '-'} | {m.requests} | {m.throughput_rps} | "
        f"{m.throughput_rps / base.throughput_rps:.2f} | {m.p50_ms} | "
        f"{m.p95_ms} | {m.max_ms} | {m.errors} | {m.correct}/{m.requests} |\n" for m in levels)
    markdown = (
        "#### eval serve: `select route_query(...)` through `dbrouter serve` (Postgres wire, psycopg"
        + (", a connection per request" if base.connect_each else "") + ")\n\n"
        f"| clients | hostile client's statements | requests | throughput req/s | throughput / {base.clients} client(s) | "
        "p50 ms | p95 ms | max ms | errors | routed to the example's database |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + rows + "\n"
        f"The {base.questions} example questions of a KB of {base.databases} databases ({base.embedder}), cycled; one "
        + ("server process, each client its own thread opening a connection per request (a request timed from the "
           "connect to the close, as `psql -c` or a BI tool without a connection pool), "
           if base.connect_each else "server process, each client its own connection and thread, ")
        + f"server and clients on loopback of one machine; the server runs {default_max_running()} statements at "
        "once (its default: the others wait their turn) and keeps no answers (`DBROUTER_KEPT_ANSWERS=0`: every "
        "request is routed; by default a question asked again is answered from the answers kept), though a "
        "question's vector, computed once, is reused from its second round on. "
        f"In-process, the questions on one `dbrouter.connect()` connection, each once after 5 untimed: p50 "
        f"{base.inprocess_p50_ms} ms, p95 {base.inprocess_p95_ms} ms."
        + (" A row with a hostile client had one more connection sending, in turn, an embed() over the whole "
           "document table, a 400M-pair join, a 3M-row result, SQL in a string and embed() over 100k rows, from "
           "before the others started until they "
           "finished." if any(m.hostile for m in levels) else "") + "\n\n")
    return Report(key="eval serve connect-each" if base.connect_each else "eval serve", command=command, data={"levels": [asdict(m) for m in levels]}, markdown=markdown,
                  note=f"{sum(m.seconds for m in levels):.1f} s", text=None)
