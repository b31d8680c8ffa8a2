import time

import pytest

from dbrouter.llm import LLMClient, LLMUnavailable
from tests.fake_llm import Broken, FakeLLM, Slow


def client(url, tmp_path, timeout=5.0):
    return LLMClient(base_url=url, model="fake-model", timeout=timeout, cache_dir=tmp_path / "cache")


def test_real_openai_client_talks_to_local_server_and_caches(tmp_path):
    with FakeLLM(lambda system, user: f"echo: {user}") as fake:
        llm = client(fake.base_url, tmp_path)
        assert llm.complete("sys", "hello") == "echo: hello"
        assert llm.complete("sys", "hello") == "echo: hello"
        assert len(fake.requests) == 1 and llm.stats.cache_hits == 1
        assert fake.requests[0]["model"] == "fake-model" and fake.requests[0]["temperature"] == 0
        # a fresh client (a second run) reads the same cache: no call
        again = client(fake.base_url, tmp_path)
        assert again.complete("sys", "hello") == "echo: hello" and again.stats.calls == 0


def test_unreachable_server_is_a_clear_error(tmp_path):
    llm = client("http://127.0.0.1:9/v1", tmp_path, timeout=2)
    with pytest.raises(LLMUnavailable, match="unset it to use the rule-based path"):
        llm.complete("s", "u")


def test_credentials_in_the_base_url_never_reach_a_message(tmp_path):
    """Issue 22 finding 5: the LLM base URL's user info and token were printed in full."""
    llm = LLMClient(base_url="http://svc:pw-in-url@127.0.0.1:9/v1?api_key=tok-in-query", model="m", timeout=2,
                    api_key="sk-the-api-key", cache_dir=tmp_path / "cache")
    for _ in range(2):  # the failing call, then the "not answering" refusal
        with pytest.raises(LLMUnavailable) as caught:
            llm.complete("s", "u")
        text = str(caught.value)
        assert "127.0.0.1:9" in text and "svc:***@" in text
        assert not any(secret in text for secret in ("pw-in-url", "tok-in-query", "sk-the-api-key"))
    assert "sk-the-api-key" not in repr(llm)


def test_slow_and_failing_answers(tmp_path):
    def responder(system, user):
        if user == "slow":
            raise Slow(2.0, "late")
        raise Broken(500)

    with FakeLLM(responder) as fake:
        llm = client(fake.base_url, tmp_path, timeout=0.5)
        with pytest.raises(LLMUnavailable):  # an error status: the endpoint answers, keep asking
            llm.complete("s", "boom")
        with pytest.raises(LLMUnavailable, match="Timeout"):
            llm.complete("s", "slow")
        assert llm.stats.failures == 2 and len(fake.requests) == 2
        # a timed-out (or unreachable) endpoint is not asked again in this command
        with pytest.raises(LLMUnavailable, match="not asked again"):
            llm.complete("s", "another item")
        assert len(fake.requests) == 2


def test_unreachable_endpoint_costs_one_timeout_not_one_per_item(tmp_path):
    llm = client("http://127.0.0.1:9/v1", tmp_path, timeout=2)
    started = time.monotonic()
    for item in range(10):
        with pytest.raises(LLMUnavailable):
            llm.complete("s", f"item {item}")
    assert llm.stats.calls == 1 and time.monotonic() - started < 5


def test_time_budget_bounds_a_slow_endpoint(tmp_path):
    with FakeLLM(lambda system, user: (_ for _ in ()).throw(Slow(0.4, "late but fine"))) as fake:
        llm = LLMClient(base_url=fake.base_url, model="m", timeout=5.0, cache_dir=tmp_path / "c", budget=1.0)
        started = time.monotonic()
        answered = 0
        with pytest.raises(LLMUnavailable, match="time budget of 1 s"):
            for item in range(20):
                llm.complete("s", f"item {item}")
                answered += 1
        assert 1 <= answered <= 3 and time.monotonic() - started < 2.5


def test_a_fresh_client_has_its_own_budget_and_counters(tmp_path):
    """A long-running server (the MCP tools) takes one per call: the budget's deadline is absolute,
    so a shared client refused every call two minutes after its first one."""
    with FakeLLM(lambda system, user: (_ for _ in ()).throw(Slow(0.4, "late but fine"))) as fake:
        server = LLMClient(base_url=fake.base_url, model="m", timeout=5.0, cache_dir=tmp_path / "c", budget=1.0)
        with pytest.raises(LLMUnavailable, match="time budget of 1 s"):
            for item in range(20):
                server.complete("s", f"item {item}")
        call = server.fresh()
        assert (call.base_url, call.model, call.budget, call.cache_dir) == (server.base_url, "m", 1.0, tmp_path / "c")
        assert call.complete("s", "a new request") == "late but fine"
        assert call.stats.calls == 1 and server.stats.calls >= 2
        with pytest.raises(LLMUnavailable, match="time budget of 1 s"):
            server.complete("s", "the spent client stays spent")


def test_from_env(monkeypatch):
    monkeypatch.delenv("DBROUTER_LLM_BASE_URL", raising=False)
    assert LLMClient.from_env() is None
    monkeypatch.setenv("DBROUTER_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("DBROUTER_LLM_MODEL", "m")
    llm = LLMClient.from_env()
    assert llm.base_url == "http://127.0.0.1:1/v1" and llm.model == "m"


def test_an_empty_cache_setting_means_the_default_not_the_current_directory(monkeypatch, tmp_path):
    from pathlib import Path

    monkeypatch.setenv("DBROUTER_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    for value in ("", "  "):
        monkeypatch.setenv("DBROUTER_LLM_CACHE", value)
        assert LLMClient.from_env().cache_dir == Path(".dbrouter/llm-cache")
    monkeypatch.setenv("DBROUTER_LLM_CACHE", str(tmp_path / "c"))
    assert LLMClient.from_env().cache_dir == tmp_path / "c"


def test_budget_and_concurrency_from_env(monkeypatch):
    monkeypatch.setenv("DBROUTER_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("DBROUTER_LLM_BUDGET", "15")
    monkeypatch.setenv("DBROUTER_LLM_CONCURRENCY", "2")
    llm = LLMClient.from_env()
    assert llm.budget == 15 and llm.concurrency == 2
    monkeypatch.setenv("DBROUTER_LLM_BUDGET", "0")
    assert LLMClient.from_env().budget is None
    monkeypatch.setenv("DBROUTER_LLM_BUDGET", "soon")
    with pytest.raises(LLMUnavailable, match="DBROUTER_LLM_BUDGET='soon' is not a number"):
        LLMClient.from_env()


@pytest.mark.parametrize("base", ["http://u:p?ss@127.0.0.1:9/v1", "not a url with hunter2", "ftp://127.0.0.1/v1"])
def test_a_base_url_the_client_cannot_read_is_refused_without_echoing_it(monkeypatch, base):
    """Hardening review: a '?' in the base URL's password crashed `ask` with a traceback, and a
    value that was no URL was echoed verbatim."""
    from dbrouter.llm import LLMClient, LLMUnavailable

    monkeypatch.setenv("DBROUTER_LLM_BASE_URL", base)
    with pytest.raises(LLMUnavailable, match="DBROUTER_LLM_BASE_URL") as refused:
        LLMClient.from_env()
    assert "p?ss" not in str(refused.value) and "hunter2" not in str(refused.value)
