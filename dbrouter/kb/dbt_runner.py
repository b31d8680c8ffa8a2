"""Run dbt on the dbrouter project from the CLI (in a subprocess, so dbt's connection
and the caller's never share a DuckDB file handle). dbt is stopped with its caller: see
:func:`run_dbt`."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from dbrouter import settings
from dbrouter.errors import DbtRunError

# The dbt project (dbt_project.yml, models/, macros/, seeds/, ...) ships inside the wheel as
# dbrouter/dbt_project/ (setup.py copies it at build time, as dbt-duckdb ships its own project
# inside its package); in a checkout or an editable install it is the repository root.
PACKAGED_PROJECT_DIR = Path(__file__).resolve().parents[1] / "dbt_project"
CHECKOUT_PROJECT_DIR = Path(__file__).resolve().parents[2]
PROJECT_DIR = PACKAGED_PROJECT_DIR if (PACKAGED_PROJECT_DIR / "dbt_project.yml").is_file() else CHECKOUT_PROJECT_DIR


def project_dir() -> Path:
    """The dbt project directory: ``$DBROUTER_PROJECT_DIR``, the one inside the installed package, or
    the checkout holding this package."""
    path = Path(settings.get("DBROUTER_PROJECT_DIR") or PROJECT_DIR)
    if not (path / "dbt_project.yml").is_file():
        raise DbtRunError(f"no dbt_project.yml in {path}: reinstall dbrouter (the wheel ships its dbt project) or "
                          "set DBROUTER_PROJECT_DIR to a dbrouter checkout")
    return path


def user_profile(path: Path) -> dict:
    """The ``dbrouter`` profile of a user's profiles folder (``$DBT_PROFILES_DIR``).

    Args:
        path: the folder.

    Returns:
        The profile mapping (``target``, ``outputs``).

    Raises:
        DbtRunError: no readable profiles.yml there, or it has no profile named ``dbrouter`` (dbt's
            own "Could not find profile named 'dbrouter'" does not say that the folder came from
            the environment).
    """
    import yaml

    file = path / "profiles.yml"
    hint = (f"$DBT_PROFILES_DIR is set to {path}, so dbrouter runs dbt with the profiles there: add the "
            "`dbrouter` profile of profiles.example.yml to it, or unset DBT_PROFILES_DIR to let dbrouter "
            "write its own profile next to the warehouse")
    try:
        profiles = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DbtRunError(f"cannot read {file} ({exc}); {hint}") from exc
    profile = profiles.get("dbrouter") if isinstance(profiles, dict) else None
    if not isinstance(profile, dict):
        raise DbtRunError(f"{file} has no profile named 'dbrouter'; {hint}")
    return profile


def profiles_dir(workdir: Path) -> Path:
    """A profiles folder with profile ``dbrouter``: ``$DBT_PROFILES_DIR`` if set (checked to hold
    that profile), else a copy of ``profiles.example.yml`` written to ``<workdir>/profiles``."""
    if os.environ.get("DBT_PROFILES_DIR"):
        path = Path(os.environ["DBT_PROFILES_DIR"])
        user_profile(path)
        return path
    out = workdir / "profiles"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(project_dir() / "profiles.example.yml", out / "profiles.yml")
    return out


def dbt_executable() -> str:
    """The ``dbt`` next to the running Python (the project's venv), else the one on PATH."""
    local = Path(sys.executable).parent / "dbt"
    if local.exists():
        return str(local)
    found = shutil.which("dbt")
    if not found:
        raise DbtRunError("dbt is not installed: run `make setup`")
    return found


def dbt_workdir(warehouse: Path) -> Path:
    """Where :func:`run_dbt` keeps dbt's profiles, ``target/`` and ``logs/`` for ``warehouse``.

    Args:
        warehouse: the DuckDB warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt``.
    """
    return warehouse.resolve().parent / ".dbrouter-dbt"


def target_path(warehouse: Path) -> Path:
    """dbt's target folder for builds of ``warehouse`` (``run_results.json``, ``manifest.json``).

    Args:
        warehouse: the DuckDB warehouse file.

    Returns:
        ``<warehouse folder>/.dbrouter-dbt/target``.
    """
    return dbt_workdir(warehouse) / "target"


def run_dbt(args: list[str], warehouse: Path, embedder: str | None = None,
            extra_env: dict[str, str] | None = None, quiet: bool = False,
            workdir: Path | None = None, pass_fds: tuple[int, ...] = ()) -> str:
    """Run ``dbt <args>`` against ``warehouse``; dbt never outlives the caller.

    dbt runs in its own process group (a new session). A SIGINT or SIGTERM that reaches this
    process is forwarded to that group; dbt gets :data:`STOP_GRACE_SECONDS` to stop (a second
    signal, or the end of the grace time, kills it) and :class:`Interrupted` is raised once it
    has exited. On Linux the child also asks the kernel for ``PR_SET_PDEATHSIG`` = SIGTERM, so
    even a SIGKILL of this process stops dbt instead of leaving it running under pid 1 with the
    DuckDB write lock.

    Args:
        args: dbt arguments, e.g. ``["build"]``.
        warehouse: DuckDB warehouse file (the profile's ``path``, via ``$DBROUTER_WAREHOUSE``).
        embedder: embedder name passed to the profile (``$DBROUTER_EMBEDDER``).
        extra_env: more environment variables.
        quiet: capture output instead of streaming it.
        workdir: dbt's profiles, ``target/`` and ``logs/`` folder; default
            :func:`dbt_workdir` of ``warehouse`` (an atomic build passes the real warehouse's
            while ``warehouse`` is the temporary copy).
        pass_fds: file descriptors dbt inherits (an atomic build passes its lock file, so the
            lock is held until dbt too has exited).

    Returns:
        dbt's output when ``quiet``, else an empty string.

    Raises:
        DbtRunError: dbt exited non-zero (the message holds the tail of its output).
        Interrupted: SIGINT/SIGTERM arrived while dbt ran; dbt has been stopped.
    """
    workdir = workdir or dbt_workdir(warehouse)
    env = dict(os.environ)
    env["DBROUTER_WAREHOUSE"] = str(warehouse.resolve())
    if embedder:
        env["DBROUTER_EMBEDDER"] = embedder
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    env.update(extra_env or {})
    cmd = [dbt_executable(), *args, "--project-dir", str(project_dir()),
           "--profiles-dir", str(profiles_dir(workdir)),
           "--target-path", str(workdir / "target"), "--log-path", str(workdir / "logs")]
    out, errout, returncode = _run_stoppable(cmd, env, str(project_dir()), quiet, pass_fds)
    if returncode != 0:
        tail = "\n".join(((out or "") + (errout or "")).splitlines()[-30:])
        raise DbtRunError(f"`dbt {' '.join(args)}` failed (exit {returncode}); "
                          f"see {workdir / 'logs' / 'dbt.log'}\n{tail}")
    return out or ""


STOP_GRACE_SECONDS = 20.0
"""How long dbt may take to stop after a forwarded SIGINT/SIGTERM before it is killed."""

_PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM stopped the run (of dbt, or of a whole build); dbt has exited.

    A :class:`KeyboardInterrupt`, so the CLI reports it as an interruption (exit 130).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _die_with_parent_fn() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the kernel send SIGTERM to the child when this process dies.

    Returns:
        The function (Linux, libc found), else None. libc is loaded here, in the parent: the child
        only calls ``prctl`` and compares its parent pid (it exits at once if the parent already
        died between ``fork`` and ``prctl``).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os._exit(143)

    return preexec


def _signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to process group ``pgid``; a group that is gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _run_stoppable(cmd: list[str], env: dict[str, str], cwd: str, quiet: bool,
                   pass_fds: tuple[int, ...] = ()) -> tuple[str, str, int]:
    """Run ``cmd`` in its own process group and stop the group with this process.

    Args:
        cmd: the command line.
        env: its environment.
        cwd: its working directory.
        quiet: capture stdout/stderr (else they are inherited).
        pass_fds: file descriptors the child inherits.

    Returns:
        (stdout, stderr, exit code); the outputs are empty strings unless ``quiet``.

    Raises:
        Interrupted: SIGINT/SIGTERM arrived; the group was stopped and reaped first.
    """
    pipe = subprocess.PIPE if quiet else None
    procs: list[subprocess.Popen] = []
    received: list[int] = []

    def forward(signum, _frame) -> None:
        received.append(signum)
        if procs:  # a second signal kills at once
            _signal_group(procs[0].pid, signum if len(received) == 1 else signal.SIGKILL)

    in_main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
    out = errout = ""
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, text=True, stdout=pipe, stderr=pipe,
                                start_new_session=True, preexec_fn=_die_with_parent_fn(),
                                pass_fds=pass_fds)
        procs.append(proc)
        if received:  # arrived while starting
            _signal_group(proc.pid, received[0])
        deadline = None
        while True:
            try:
                out, errout = proc.communicate(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if received and deadline is None:
                    deadline = time.monotonic() + STOP_GRACE_SECONDS
                if deadline is not None and time.monotonic() > deadline:
                    _signal_group(proc.pid, signal.SIGKILL)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for proc in procs:
            if proc.poll() is None:  # leaving on an exception: never leave dbt behind
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait()
    if received:
        raise Interrupted(received[0])
    return out or "", errout or "", procs[0].returncode
