"""LLM client for the external Python steps (any OpenAI-compatible endpoint).

Configuration (environment):

* ``DBROUTER_LLM_BASE_URL`` - e.g. ``http://127.0.0.1:8000/v1``; unset = no LLM (the documented
  rule-based paths are used, and the commands say so).
* ``DBROUTER_LLM_MODEL`` - model name (default ``gpt-4o-mini``).
* ``DBROUTER_LLM_API_KEY`` - key (default ``not-needed`` for local servers).
* ``DBROUTER_LLM_TIMEOUT`` - seconds per call (default 30).
* ``DBROUTER_LLM_CACHE`` - cache folder (default ``.dbrouter/llm-cache``, also when set empty); answers are cached by
  a hash of (model, messages, temperature, sample index), so a second run makes no calls and
  replays the same sampled candidates.

Routing (``route_query``) never calls this: only CLI steps do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from dbrouter import settings
from dbrouter.errors import LLMUnavailable
from dbrouter.redaction import redact

DEFAULT_CACHE = ".dbrouter/llm-cache"
"""Where answers are cached when ``DBROUTER_LLM_CACHE`` is unset or empty."""

T = TypeVar("T")


@dataclass
class LLMStats:
    """Calls made and answers served from the cache."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    """Tokens of the prompts sent (from the responses' ``usage``; cached answers add none)."""
    completion_tokens: int = 0


@dataclass
class Completion:
    """One answer of :meth:`LLMClient.chat` with its token usage (0 when the endpoint reports none)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cached: bool


@dataclass
class StepReport:
    """Common counters of an LLM step over many items (statements, examples)."""

    malformed: int = 0
    llm_errors: int = 0
    skipped_cached: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def written(self) -> int:
        """Rows the step stored in the warehouse (0 for a step that stores nothing)."""
        return 0

    def summary(self) -> str:
        """One line for the user."""
        return (f"{self.malformed} malformed twice, {self.llm_errors} LLM errors, "
                f"{self.skipped_cached} already done")


@dataclass
class LLMClient:
    """A chat-completions client with an on-disk cache keyed by the prompt hash."""

    base_url: str
    model: str = "gpt-4o-mini"
    api_key: str = field(default="not-needed", repr=False)
    timeout: float = 30.0
    cache_dir: Path = Path(DEFAULT_CACHE)
    stats: LLMStats = field(default_factory=LLMStats)
    budget: float | None = 120.0
    """Seconds all calls of this client (one command) may take together; None = no limit."""
    concurrency: int = 4
    """How many calls a step may have in flight at once (phrase mapping asks per database)."""
    _deadline: float | None = field(default=None, init=False, repr=False)
    _down: str | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @classmethod
    def from_env(cls) -> LLMClient | None:
        """The configured client, or None when ``DBROUTER_LLM_BASE_URL`` is not set."""
        base = settings.env("DBROUTER_LLM_BASE_URL")
        if not base:
            return None
        _check_base_url(base)
        return cls(base_url=base,
                   model=settings.get("DBROUTER_LLM_MODEL") or "",
                   api_key=settings.get("DBROUTER_LLM_API_KEY") or "",
                   timeout=settings.seconds("DBROUTER_LLM_TIMEOUT", LLMUnavailable),
                   # blank means unset (settings): Path("") would be the current directory
                   cache_dir=Path(settings.get("DBROUTER_LLM_CACHE") or DEFAULT_CACHE),
                   budget=settings.limit("DBROUTER_LLM_BUDGET", LLMUnavailable),
                   concurrency=max(1, int(settings.limit("DBROUTER_LLM_CONCURRENCY", LLMUnavailable) or 1)))

    def _key(self, messages: list[dict], temperature: float = 0.0, sample: int = 0) -> str:
        """The cache key: a hash of model and messages, plus temperature and sample index when not 0.

        (model, messages) alone is the key of a temperature-0 first answer, so caches written by
        :meth:`complete` before sampling existed stay valid.
        """
        spec: dict = {"model": self.model, "messages": messages}
        if temperature or sample:
            spec.update(temperature=temperature, sample=sample)
        blob = json.dumps(spec, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def fresh(self) -> LLMClient:
        """A client of the same endpoint and settings with its own budget and counters: one per
        request of a long-running server (the MCP server's tools), whose budget would otherwise
        run out for good two minutes after the first call.

        Returns:
            The new client (the cache directory is shared).
        """
        return dataclasses.replace(self, stats=LLMStats())

    def restart_budget(self) -> None:
        """Start a new time budget (:attr:`budget`) from the next call: one per question of an eval.

        An endpoint found down stays down (it is not asked again).
        """
        with self._lock:
            self._deadline = None

    def _time_left(self) -> float:
        """The timeout for the next call: the per-call timeout, cut to what is left of the budget.

        Returns:
            Seconds (> 0).

        Raises:
            LLMUnavailable: the budget is used up, or an earlier call found the endpoint down
                (one unreachable endpoint must not cost a timeout per item).
        """
        with self._lock:
            if self._down:
                raise LLMUnavailable(f"LLM at {self.shown_url} is not answering ({self._down}); not asked again "
                                     "in this command: the rule-based path stands")
            if self.budget is None:
                return self.timeout
            now = time.monotonic()
            if self._deadline is None:
                self._deadline = now + self.budget
            left = self._deadline - now
        if left <= 0:
            raise LLMUnavailable(f"the LLM time budget of {self.budget:g} s for this command is used up "
                                 "(DBROUTER_LLM_BUDGET): the rest takes the rule-based path")
        return min(self.timeout, left)

    def complete(self, system: str, user: str, use_cache: bool = True) -> str:
        """One chat completion (temperature 0), served from the cache when possible.

        Args:
            system: system prompt.
            user: user prompt.
            use_cache: read the cache (a retry after a malformed answer passes False).

        Returns:
            The answer text.

        Raises:
            LLMUnavailable: the endpoint is unreachable, timed out or returned an error, the
                command's time budget is used up, or an earlier call found the endpoint down.
        """
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return self.chat(messages, use_cache=use_cache).text

    def chat(self, messages: list[dict], temperature: float = 0.0, sample: int = 0,
             use_cache: bool = True) -> Completion:
        """One chat completion of a (multi-turn) conversation, served from the cache when possible.

        Args:
            messages: ``[{"role": "system"|"user"|"assistant", "content": str}, ...]``.
            temperature: sampling temperature.
            sample: the sample index; N samples of one conversation are N cached answers, so a
                rerun replays the same candidates from the cache.
            use_cache: read the cache (a retry after a malformed answer passes False); the answer
                is written to the cache either way.

        Returns:
            The :class:`Completion`; a cached one has ``cached=True`` and adds no tokens to
            :attr:`stats` (its ``prompt_tokens``/``completion_tokens`` are those of the original call).

        Raises:
            LLMUnavailable: the endpoint is unreachable, timed out or returned an error, the
                command's time budget is used up, or an earlier call found the endpoint down.
        """
        key = self._key(messages, temperature, sample)
        path = self.cache_dir / key[:2] / f"{key}.json"
        if use_cache and path.is_file():
            stored = json.loads(path.read_text())
            with self._lock:
                self.stats.cache_hits += 1
            return Completion(stored["answer"], int(stored.get("prompt_tokens", 0)),
                              int(stored.get("completion_tokens", 0)), cached=True)
        done = self._call(messages, temperature)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": self.model, "answer": done.text, "prompt_tokens": done.prompt_tokens,
                                    "completion_tokens": done.completion_tokens}))
        return done

    @property
    def shown_url(self) -> str:
        """The base URL fit for messages: a password or token in it masked."""
        return redact(self.base_url)

    def _scrub(self, text: str) -> str:
        """``text`` (an error from the client library) without the base URL's credentials or the API key."""
        text = text.replace(self.base_url, self.shown_url)
        return text.replace(self.api_key, "***") if self.api_key and len(self.api_key) > 3 else text

    def _call(self, messages: list[dict], temperature: float) -> Completion:
        """Ask the endpoint (no cache), counting the call, its tokens and failures in :attr:`stats`."""
        import openai

        timeout = self._time_left()
        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=timeout, max_retries=0)
        with self._lock:
            self.stats.calls += 1
        try:
            resp = client.chat.completions.create(model=self.model, messages=messages, temperature=temperature)  # ty: ignore[invalid-argument-type] - plain role/content dicts
            answer = resp.choices[0].message.content or ""
        except Exception as exc:  # openai raises many classes: connection, timeout, status
            budget_cut = isinstance(exc, openai.APITimeoutError) and timeout < self.timeout
            with self._lock:
                self.stats.failures += 1
                if isinstance(exc, openai.APIConnectionError) and not budget_cut:  # unreachable/timed out
                    self._down = f"{type(exc).__name__}: {self._scrub(str(exc))}"
            if budget_cut:
                raise LLMUnavailable(f"the LLM time budget of {self.budget:g} s for this command ran out during "
                                     "a call (DBROUTER_LLM_BUDGET): the rest takes the rule-based path") from exc
            raise LLMUnavailable(f"LLM at {self.shown_url} failed ({type(exc).__name__}: {self._scrub(str(exc))}); "
                                 "check DBROUTER_LLM_BASE_URL or unset it to use the rule-based path") from exc
        usage = getattr(resp, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        with self._lock:
            self.stats.prompt_tokens += prompt
            self.stats.completion_tokens += completion
        return Completion(answer, prompt, completion, cached=False)


def _check_base_url(base: str) -> None:
    """Refuse a ``DBROUTER_LLM_BASE_URL`` the HTTP client cannot use, without echoing it (it may
    hold a password).

    Raises:
        LLMUnavailable: not an http(s) URL with a host, or one the HTTP client cannot read (a ``?``,
            ``#`` or ``@`` unquoted in its password).
    """
    import httpx

    shown = redact(base)
    try:
        url = httpx.URL(base)
        ok = url.scheme in ("http", "https") and bool(url.host) and (url.password or None) == _userinfo_password(base)
    except Exception:  # noqa: BLE001 - httpx.InvalidURL and friends
        ok = False
    if not ok:
        raise LLMUnavailable(f"DBROUTER_LLM_BASE_URL ({shown}) is not an http(s) URL the client can read: write it as "
                             "http(s)://host[:port]/v1, with any '?', '#', '@' or '/' in a password percent-encoded "
                             "(%3F, %23, %40, %2F), or unset it to use the rule-based path")


def _userinfo_password(base: str) -> str | None:
    """The password as SQLAlchemy's reading of the URL has it (what :func:`redact` masks); a reading
    that differs from the HTTP client's is refused rather than sent with a password cut short."""
    from urllib.parse import unquote

    match = re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://[^:/@]*:([^@]*)@", base)
    return unquote(match[1]) if match else None


def ask_parsed(llm: LLMClient, system: str, user: str, parse: Callable[[str], T | None]) -> T | None:
    """Ask, parse strictly, and retry once (bypassing the cache) when the answer is malformed.

    Args:
        llm: the client.
        system: system prompt.
        user: user prompt.
        parse: returns the parsed value, or None for a malformed answer.

    Returns:
        The parsed value, or None when both answers were malformed (callers then take the
        non-LLM path and report it).

    Raises:
        LLMUnavailable: the endpoint failed.
    """
    for attempt in range(2):
        parsed = parse(llm.complete(system, user, use_cache=attempt == 0))
        if parsed is not None:
            return parsed
    return None


def ask_for_item(llm: LLMClient, report: StepReport, db_id: str, system: str, user: str,
                 parse: Callable[[str], T | None]) -> T | None:
    """:func:`ask_parsed` for one item of an LLM step, with the step's accounting.

    Args:
        llm: the client.
        report: counters to update (``llm_errors`` with a note naming the database, ``malformed``).
        db_id: the item's database (for the note).
        system: system prompt.
        user: user prompt.
        parse: strict parser (None = malformed).

    Returns:
        The parsed answer, or None when the LLM failed or answered malformed twice (the item then
        keeps its rule-based form).
    """
    return account_item(report, db_id, *try_ask(llm, system, user, parse))


def try_ask(llm: LLMClient, system: str, user: str, parse: Callable[[str], T | None]
            ) -> tuple[T | None, LLMUnavailable | None]:
    """:func:`ask_parsed` that returns the failure instead of raising it (safe to run in a thread).

    Args:
        llm: the client.
        system: system prompt.
        user: user prompt.
        parse: strict parser (None = malformed).

    Returns:
        (the parsed answer or None, the LLM failure or None).
    """
    try:
        return ask_parsed(llm, system, user, parse), None
    except LLMUnavailable as exc:
        return None, exc


def account_item(report: StepReport, db_id: str, parsed: T | None, error: LLMUnavailable | None) -> T | None:
    """Count one item's outcome in ``report`` (call from one thread, in item order).

    Args:
        report: the step's counters.
        db_id: the item's database (for the note).
        parsed: the parsed answer, or None.
        error: the LLM failure, or None.

    Returns:
        ``parsed``.
    """
    if error is not None:
        report.llm_errors += 1
        report.notes.append(f"{db_id}: {error}")
    elif parsed is None:
        report.malformed += 1
    return parsed
