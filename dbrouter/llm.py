"""LLM client for the external Python steps (any OpenAI-compatible endpoint).

Configuration (environment):

* ``DBROUTER_LLM_BASE_URL`` - e.g. ``http://127.0.0.1:8000/v1``; unset = no LLM (the documented
  rule-based paths are used, and the commands say so).
* ``DBROUTER_LLM_MODEL`` - model name (default ``gpt-4o-mini``).
* ``DBROUTER_LLM_API_KEY`` - key (default ``not-needed`` for local servers).
* ``DBROUTER_LLM_TIMEOUT`` - seconds per call (default 30).
* ``DBROUTER_LLM_CACHE`` - cache folder (default ``.dbrouter/llm-cache``); answers are cached by
  a hash of (model, messages), so a second run makes no calls.

Routing (``route_query``) never calls this: only CLI steps do.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TypeVar

from dbrouter.errors import DbrouterError

T = TypeVar("T")


class LLMUnavailable(DbrouterError):
    """The LLM endpoint could not be reached or answered with an error."""


@dataclass
class LLMStats:
    """Calls made and answers served from the cache."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0


@dataclass
class StepReport:
    """Common counters of an LLM step over many items (statements, examples)."""

    malformed: int = 0
    llm_errors: int = 0
    skipped_cached: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class LLMClient:
    """A chat-completions client with an on-disk cache keyed by the prompt hash."""

    base_url: str
    model: str = "gpt-4o-mini"
    api_key: str = "not-needed"
    timeout: float = 30.0
    cache_dir: Path = Path(".dbrouter/llm-cache")
    stats: LLMStats = field(default_factory=LLMStats)

    @classmethod
    def from_env(cls) -> "LLMClient | None":
        """The configured client, or None when ``DBROUTER_LLM_BASE_URL`` is not set."""
        base = os.environ.get("DBROUTER_LLM_BASE_URL", "").strip()
        if not base:
            return None
        return cls(base_url=base,
                   model=os.environ.get("DBROUTER_LLM_MODEL", "gpt-4o-mini"),
                   api_key=os.environ.get("DBROUTER_LLM_API_KEY", "not-needed"),
                   timeout=float(os.environ.get("DBROUTER_LLM_TIMEOUT", "30")),
                   cache_dir=Path(os.environ.get("DBROUTER_LLM_CACHE", ".dbrouter/llm-cache")))

    def _key(self, messages: list[dict]) -> str:
        blob = json.dumps({"model": self.model, "messages": messages}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def complete(self, system: str, user: str, use_cache: bool = True) -> str:
        """One chat completion (temperature 0), served from the cache when possible.

        Args:
            system: system prompt.
            user: user prompt.
            use_cache: read the cache (a retry after a malformed answer passes False).

        Returns:
            The answer text.

        Raises:
            LLMUnavailable: the endpoint is unreachable, timed out or returned an error.
        """
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        key = self._key(messages)
        path = self.cache_dir / key[:2] / f"{key}.json"
        if use_cache and path.is_file():
            self.stats.cache_hits += 1
            return json.loads(path.read_text())["answer"]
        import openai

        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0)
        self.stats.calls += 1
        try:
            resp = client.chat.completions.create(model=self.model, messages=messages, temperature=0)
            answer = resp.choices[0].message.content or ""
        except Exception as exc:  # openai raises many classes: connection, timeout, status
            self.stats.failures += 1
            raise LLMUnavailable(f"LLM at {self.base_url} failed ({type(exc).__name__}: {exc}); "
                                 "check DBROUTER_LLM_BASE_URL or unset it to use the rule-based path") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model": self.model, "answer": answer}))
        return answer


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
    try:
        parsed = ask_parsed(llm, system, user, parse)
    except LLMUnavailable as exc:
        report.llm_errors += 1
        report.notes.append(f"{db_id}: {exc}")
        return None
    if parsed is None:
        report.malformed += 1
    return parsed
