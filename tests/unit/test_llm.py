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


def test_slow_and_failing_answers(tmp_path):
    def responder(system, user):
        if user == "slow":
            raise Slow(2.0, "late")
        raise Broken(500)

    with FakeLLM(responder) as fake:
        llm = client(fake.base_url, tmp_path, timeout=0.5)
        with pytest.raises(LLMUnavailable, match="Timeout"):
            llm.complete("s", "slow")
        with pytest.raises(LLMUnavailable):
            llm.complete("s", "boom")
        assert llm.stats.failures == 2


def test_from_env(monkeypatch):
    monkeypatch.delenv("DBROUTER_LLM_BASE_URL", raising=False)
    assert LLMClient.from_env() is None
    monkeypatch.setenv("DBROUTER_LLM_BASE_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("DBROUTER_LLM_MODEL", "m")
    llm = LLMClient.from_env()
    assert llm.base_url == "http://127.0.0.1:1/v1" and llm.model == "m"
