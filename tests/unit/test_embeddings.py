import numpy as np
import pyarrow as pa
import pytest

from python_udfs.embeddings import (
    DIM,
    MAX_TEXT_CHARS,
    EmbedderUnavailable,
    HashEmbedder,
    clean_text,
    embed_arrow,
    embed_texts,
    get_embedder,
)


def test_clean_text_handles_null_empty_and_huge():
    assert clean_text(None) is None
    assert clean_text("   ") is None
    assert clean_text(" a ") == "a"
    assert len(clean_text("x" * 100_000)) == MAX_TEXT_CHARS


def test_hash_embedder_is_deterministic_and_normalised():
    emb = HashEmbedder()
    a, b = emb.encode(["how many singers", "how many singers"])
    assert np.allclose(a, b)
    assert abs(np.linalg.norm(a) - 1) < 1e-5
    c = emb.encode(["list all stadiums"])[0]
    assert float(a @ b) > float(a @ c)


def test_embed_texts_keeps_positions_of_nulls():
    out = embed_texts(["a", None, "", "b"], HashEmbedder())
    assert out[1] is None and out[2] is None
    assert out[0] is not None and out[3] is not None


def test_embed_arrow_returns_fixed_size_list_with_nulls():
    arr = embed_arrow(pa.array(["singer", None, "   ", "stadium"]), HashEmbedder())
    assert arr.type == pa.list_(pa.float32(), DIM)
    assert arr.null_count == 2
    assert arr[0].is_valid and not arr[1].is_valid


def test_unknown_embedder_is_a_clear_error():
    with pytest.raises(EmbedderUnavailable, match="unknown embedder 'bert'"):
        get_embedder("bert")


@pytest.mark.slow
def test_minilm_loads_offline_and_ranks_paraphrases_higher():
    emb = get_embedder("minilm")
    q, para, other = emb.encode(["How many singers are there?", "Count the number of singers.",
                                 "What is the capacity of the largest stadium?"])
    assert q.shape == (DIM,)
    assert float(q @ para) > float(q @ other) + 0.2


@pytest.mark.slow
def test_minilm_question_cache_returns_exactly_the_uncached_vectors(monkeypatch):
    """A question asked again (a dashboard's refresh), or written differently in what the tokenizer
    normalises, skips the MiniLM pass and gets the very vectors an embedder without the cache computes."""
    from python_udfs.embeddings import MiniLMEmbedder

    emb = MiniLMEmbedder()
    batch = ["How many singers do we have?", "singers"]
    first = emb.encode(batch)
    model = emb._numpy_model()
    passes = []
    real = model.encode_tokens
    monkeypatch.setattr(model, "encode_tokens", lambda ids, mask: passes.append(ids.shape) or real(ids, mask))
    again = emb.encode(batch)
    assert passes == [] and emb.cache_hits == 1 and np.array_equal(first, again)
    assert np.array_equal(first, MiniLMEmbedder().encode(batch))  # a fresh, uncached embedder
    again[0, 0] = 42.0  # a caller changing its copy does not change the cache
    assert np.array_equal(emb.encode(batch), first)
    respelled = ["  how MANY   singers do we have ?", "SINGERS"]  # the same word pieces
    assert np.array_equal(emb.encode(respelled), first) and passes == [] and emb.cache_hits == 3
    assert np.array_equal(MiniLMEmbedder().encode(respelled), first)
    emb.encode(["singers", "How many singers do we have?"])  # another batch: another pass
    assert len(passes) == 1
    monkeypatch.setattr(emb, "CACHE_BATCHES", 2)
    emb.encode(["a third question"])  # the least recently used batch goes
    assert len(emb._cache) == 2
    emb.encode(batch)
    assert len(passes) == 3  # it was the first batch: computed again


def test_heartbeat_prints_while_a_long_step_runs(capsys):
    import time

    from python_udfs.embeddings import heartbeat

    with heartbeat("still working", every=0.05):
        time.sleep(0.18)
    lines = capsys.readouterr().err.splitlines()
    assert 2 <= len(lines) <= 4 and all(line.startswith("still working (") and line.endswith("s so far)")
                                        for line in lines)
    with heartbeat("quick", every=5):
        pass
    assert capsys.readouterr().err == ""


def test_bulk_embedding_prints_progress_at_most_every_few_seconds(capsys, monkeypatch):
    """A build's documents come in batches of up to 2,048: a line for each was 308 lines for
    630,454 documents. One line per PROGRESS_EVERY seconds, the first batch's always."""
    import duckdb

    from python_udfs import plugin

    def lines(every: float) -> list[str]:
        monkeypatch.setattr(plugin, "PROGRESS_EVERY", every)
        con = duckdb.connect()
        plugin.register_udfs(con, "hash")
        assert con.execute("select count(e) from (select embed('document ' || i) as e from range(6000) t(i))"
                           ).fetchall() == [(6000,)]
        con.close()
        return [line for line in capsys.readouterr().err.splitlines() if "embedded so far" in line]

    assert len(lines(3600.0)) == 1
    assert len(lines(0.0)) >= 2  # a line a batch when the interval is 0: the batches were several
