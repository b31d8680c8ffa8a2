"""LLMClient.chat (sampling, tokens, cache) and SQL generation with repair and voting."""

from __future__ import annotations

from dbrouter.llm import LLMClient
from tests.fake_llm import FakeLLM


def _client(url, tmp_path) -> LLMClient:
    return LLMClient(base_url=url, model="fake-model", timeout=5.0, cache_dir=tmp_path / "cache")


def test_chat_samples_are_distinct_cached_answers_with_tokens(tmp_path):
    counter = {"n": 0}

    def responder(messages):
        counter["n"] += 1
        return f"answer {counter['n']} to {messages[-1]['content']} after {len(messages)} messages"

    convo = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    with FakeLLM(responder, conversation=True) as fake:
        llm = _client(fake.base_url, tmp_path)
        first = [llm.chat(convo, temperature=1.0, sample=i) for i in range(3)]
        assert [c.text for c in first] == [f"answer {i} to q after 2 messages" for i in (1, 2, 3)]
        assert all(not c.cached and c.prompt_tokens == 1 and c.completion_tokens == 1 for c in first)
        assert llm.stats.calls == 3 and llm.stats.prompt_tokens == 3 and llm.stats.completion_tokens == 3
        assert [r["temperature"] for r in fake.requests] == [1.0, 1.0, 1.0]
        # a rerun (new client) replays the same candidates from the cache, counting no tokens
        again = _client(fake.base_url, tmp_path)
        replay = [again.chat(convo, temperature=1.0, sample=i) for i in range(3)]
        assert [c.text for c in replay] == [c.text for c in first] and all(c.cached for c in replay)
        assert replay[0].prompt_tokens == 1 and again.stats.prompt_tokens == 0 and again.stats.calls == 0
        # a different temperature or a longer conversation is a different answer
        assert not again.chat(convo, temperature=0.5, sample=0).cached
        longer = convo + [{"role": "assistant", "content": "x"}, {"role": "user", "content": "fix"}]
        assert again.chat(longer, temperature=1.0, sample=0).text == "answer 5 to fix after 4 messages"


def test_complete_is_chat_at_temperature_zero_and_shares_its_cache(tmp_path):
    with FakeLLM(lambda system, user: f"{system}|{user}") as fake:
        llm = _client(fake.base_url, tmp_path)
        assert llm.complete("sys", "hi") == "sys|hi"
        done = llm.chat([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
        assert done.cached and done.text == "sys|hi" and len(fake.requests) == 1
        assert fake.requests[0]["temperature"] == 0
