"""A saved model2vec static model read with ``tokenizers`` and ``safetensors`` alone.

``model2vec.StaticModel.from_pretrained`` imports huggingface_hub, httpx and the model-card
machinery (0.4 s of CPU) and deep-copies the tokenizer: about 0.6 s of every cold
`dbrouter route`, for a model that is one matrix and one tokenizer. This reads the same two
files and encodes exactly as ``StaticModel.encode`` does for a plain mean-pooled model (the
kind `dbrouter` distils): same truncation, same unknown-token removal, same float16 mean and
normalisation (tests/unit/test_static_model.py compares the vectors with model2vec's).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from python_udfs.errors import EmbedderUnavailable


class StaticModelFile:
    """A model2vec directory (``model.safetensors``, ``tokenizer.json``, ``config.json``).

    Attributes:
        embedding: (vocabulary, dim) matrix, one row per token id (float16 as saved).
        tokenizer: the ``tokenizers.Tokenizer``, padding off, truncated at ``max_length`` tokens.
        unk_token_id: the unknown token's id (dropped from every text), or None.
        max_length: tokens read per text (None: all).
        normalize: whether ``encode`` returns unit vectors (the model's config).
    """

    def __init__(self, path: str | Path) -> None:
        """Load the model directory.

        Args:
            path: the directory ``StaticModel.save_pretrained`` wrote.

        Raises:
            EmbedderUnavailable: the files are missing, or the model has token weights or a token
                mapping (vocabulary quantisation), which this reader does not reproduce.
        """
        from tokenizers import Tokenizer

        from python_udfs.tensors import mapped_tensors

        path = Path(path)
        config = json.loads((path / "config.json").read_text()) if (path / "config.json").is_file() else {}
        tensors = mapped_tensors(path / "model.safetensors")  # views of the mapped file: nothing read yet
        if set(tensors) & {"weights", "mapping"}:
            raise EmbedderUnavailable(f"the static model at {path} has token weights or a token mapping, which "
                                      "dbrouter does not read: delete the directory to distil it again")
        self.embedding: np.ndarray = tensors["embeddings"]
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.max_length: int | None = config.get("max_length", 512)
        if self.max_length is None:
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)
        self.normalize = bool(config.get("normalize", False))
        tokens = self.tokenizer.get_vocab_size()
        if tokens != len(self.embedding):
            raise EmbedderUnavailable(f"the static model at {path} has {tokens} tokens but "
                                      f"{len(self.embedding)} vectors: delete the directory to distil it again")
        unk = getattr(self.tokenizer.model, "unk_token", None)
        self.unk_token_id: int | None = self.tokenizer.token_to_id(unk) if unk else None
        self._median_token_length: int | None = None  # read from the vocabulary when a long text needs it

    def _cut(self, max_length: int) -> int:
        """model2vec cuts a text at max_length x the median token length (characters) before tokenising."""
        if self._median_token_length is None:
            self._median_token_length = int(np.median([len(t) for t in self.tokenizer.get_vocab()]))
        return max_length * self._median_token_length

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        return int(self.embedding.shape[1])

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, without special tokens and the unknown token.

        Args:
            texts: the texts.

        Returns:
            One list of ids per text.
        """
        if self.max_length is not None and any(len(t) > self.max_length for t in texts):
            # a text of at most max_length characters is never cut (every token is >= 1 character)
            cut = self._cut(self.max_length)
            texts = [t[:cut] for t in texts]
        ids = [e.ids for e in self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)]
        if self.unk_token_id is not None:
            ids = [[i for i in row if i != self.unk_token_id] for row in ids]
        return ids

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Mean of each text's token rows (zeros for a text with no known token), normalised if the
        model says so: ``StaticModel.encode`` for a plain model.

        Args:
            texts: the texts.

        Returns:
            (len(texts), dim) array of the embedding's dtype.
        """
        ids = self.tokenize(texts)
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        by_length: dict[int, list[int]] = defaultdict(list)
        for i, row in enumerate(ids):
            if row:
                by_length[len(row)].append(i)
        for rows in by_length.values():
            out[rows] = self.embedding[np.array([ids[i] for i in rows], dtype=np.int64)].mean(axis=1)
        if self.normalize:
            out32 = out.astype(np.float32)
            return (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
        return out
