"""python_udfs.static_model reads a distilled model2vec model exactly as model2vec does."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from safetensors.numpy import save_file

from python_udfs.embeddings import get_phrase_embedder, static_model_dir
from python_udfs.errors import EmbedderUnavailable
from python_udfs.static_model import BULK, StaticModelFile

TEXTS = ["How many singers do we have?", "", "   ", "x" * 5000, "naïve café — 東京 ☃", "[UNK] ##ing",
         "concert_singer.Song_release_year", "a"]


@pytest.fixture(scope="module")
def model_dir():
    get_phrase_embedder("minilm")  # distils into the cache on a fresh machine
    return StaticModelFile(static_model_dir()), static_model_dir()


def test_vectors_equal_model2vec(model_dir):
    from model2vec import StaticModel

    ours, path = model_dir
    theirs = StaticModel.from_pretrained(str(path))
    a, b = ours.encode(TEXTS), theirs.encode(TEXTS)
    assert a.dtype == b.dtype and a.shape == b.shape == (len(TEXTS), 384)
    assert np.array_equal(a, b)
    assert ours.tokenize(TEXTS) == theirs.tokenize(TEXTS)
    assert ours.unk_token_id == theirs.unk_token_id
    assert not a[1].any() and not a[2].any()  # no known token: a zero vector, as model2vec


def corpus(n: int = 3000) -> list[str]:
    """Texts that exercise both shortcuts: random ASCII (every control and punctuation character),
    some non-ASCII, added tokens in any case, schema-like labels, long and empty texts."""
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(128)] + list("éü東京☃—\u00a0\u3000\ufffd")
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(n)]
    words = ["singer", "Song_release_year", "concert", "ID", "x1", "naïve", "[UNK]", "[pad]", "##ing", "a.b", "Über"]
    texts += [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(n)]
    return texts + ["word " * 700, "x" * 5000, "", "  ", "\x0b\x0c\x1c a", "A\x7fB", "tab\tnew\nline\rend"]


def test_the_word_path_and_bulk_pooling_equal_model2vec_bit_for_bit(model_dir):
    """ASCII texts are split into words and each word is tokenised once; a batch of BULK texts or
    more is pooled from a float32 copy. Both must give model2vec's ids and vectors exactly (+0 and
    -0 told apart), in big batches and small, and again from the remembered words."""
    from model2vec import StaticModel

    ours, path = model_dir
    theirs = StaticModel.from_pretrained(str(path))
    texts = corpus()
    assert ours.tokenize(texts) == theirs.tokenize(texts)
    want = theirs.encode(texts)
    for size in (2048, 100, 3):
        got = np.concatenate([ours.encode(texts[i:i + size]) for i in range(0, len(texts), size)])
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint16), want.view(np.uint16)), size
    assert len(texts) >= 2 * BULK and ours._word_ids  # both shortcuts ran


def test_refuses_a_quantised_model(tmp_path, model_dir):
    _, path = model_dir
    for name in ("tokenizer.json", "config.json"):
        (tmp_path / name).write_text((path / name).read_text())
    emb = np.zeros((4, 384), dtype=np.float16)
    save_file({"embeddings": emb, "weights": np.ones(4, dtype=np.float32)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(EmbedderUnavailable, match="token weights"):
        StaticModelFile(tmp_path)
    save_file({"embeddings": emb}, str(tmp_path / "model.safetensors"))
    with pytest.raises(EmbedderUnavailable, match="4 vectors"):
        StaticModelFile(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["normalize"] is True


def test_encoding_imports_no_masked_arrays(model_dir):
    """A routed question's spans go through encode's small-batch path: a numpy function that
    imports numpy.ma there (np.unique does) costs every cold `dbrouter route` ~20 ms of CPU."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from python_udfs.embeddings import static_model_dir\n"
            "from python_udfs.static_model import StaticModelFile\n"
            "m = StaticModelFile(static_model_dir())\n"
            "m.encode(['How many singers do we have?', 'singer name'])\n"
            "m.encode(['concert_singer.Song_release_year'] * 100)\n"
            "print('numpy.ma' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc.stderr
