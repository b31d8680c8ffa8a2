"""python_udfs.static_model reads a distilled model2vec model exactly as model2vec does."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file

from python_udfs.embeddings import get_phrase_embedder, static_model_dir
from python_udfs.errors import EmbedderUnavailable
from python_udfs.static_model import StaticModelFile

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
