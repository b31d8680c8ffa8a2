"""A saved model2vec static model read with ``tokenizers`` and ``safetensors`` alone.

``model2vec.StaticModel.from_pretrained`` imports huggingface_hub, httpx and the model-card
machinery (0.4 s of CPU) and deep-copies the tokenizer: about 0.6 s of every cold
`dbrouter route`, for a model that is one matrix and one tokenizer. This reads the same two
files and encodes exactly as ``StaticModel.encode`` does for a plain mean-pooled model (the
kind `dbrouter` distils): same truncation, same unknown-token removal, same float16 mean and
normalisation (tests/unit/test_static_model.py compares the vectors with model2vec's).

A build embeds every document with it (m2v) and every document's content words (the pure-SQL
path): 1.3 million texts at 10,000 databases. Two shortcuts give the same ids and vectors, bit
for bit, for about two thirds of the time (issue 36):

* an ASCII text is split into words as the BERT normaliser and pre-tokeniser split it (control
  characters dropped, lower case, runs of letters and digits, each other character alone), and
  each distinct word is tokenised once and remembered: WordPiece works word by word;
* a batch of texts is pooled from a float32 copy of the matrix, summing rows in token order as
  numpy's float16 ``mean`` does, instead of converting every gathered row from float16.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import cast

import numpy as np

from python_udfs.errors import EmbedderUnavailable

_CONTROL = dict.fromkeys([*range(9), 11, 12, *range(14, 32), 127])
"""ASCII control characters the BERT normaliser drops (tab, newline and return become spaces)."""

_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9\s]")
"""The BERT pre-tokeniser's pieces of a cleaned, lower-cased ASCII text: letter and digit runs,
and every other non-space character alone (ASCII punctuation)."""

MAX_WORDS = 1_000_000
"""Distinct words whose ids are remembered; the memory is forgotten when it grows past this."""

BULK = 64
"""Texts from which ``encode`` pools from a float32 copy of the matrix (made on first use: 45 MB,
~20 ms): a routed question's handful of spans reads the mapped float16 rows instead."""


class StaticModelFile:
    """A model2vec directory (``model.safetensors``, ``tokenizer.json``, ``config.json``).

    Attributes:
        embedding: (vocabulary, dim) matrix, one row per token id (float16 as saved).
        tokenizer: the ``tokenizers.Tokenizer``, padding off, truncated at ``max_length`` tokens.
        lock: held while the tokenizer is in use (the Rust tokenizer refuses concurrent use).
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
        self.lock = threading.Lock()  # the Rust tokenizer refuses concurrent use ("Already borrowed")
        self._word_ids: dict[str, list[int]] = {}
        norm, pre = self.tokenizer.normalizer, self.tokenizer.pre_tokenizer
        # the word path reproduces exactly this pipeline; any other tokenizer reads every text itself
        self._by_words = (type(norm).__name__ == "BertNormalizer" and bool(norm.clean_text) and bool(norm.lowercase)
                          and type(pre).__name__ == "BertPreTokenizer"
                          and type(self.tokenizer.model).__name__ == "WordPiece")
        self._added = [t.content for t in self.tokenizer.get_added_tokens_decoder().values()]
        self._matrix32: np.ndarray | None = None

    def _cut(self, max_length: int) -> int:
        """model2vec cuts a text at max_length x the median token length (characters) before tokenising."""
        if self._median_token_length is None:
            with self.lock:
                vocab = self.tokenizer.get_vocab()
            self._median_token_length = int(np.median([len(t) for t in vocab]))
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
        flat, lengths = self.token_rows(texts)
        return [row.tolist() for row in np.split(flat, np.cumsum(lengths)[:-1])] if len(texts) else []

    def token_rows(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`tokenize`'s ids as one array: every text's ids in turn, and each text's count.

        Args:
            texts: the texts.

        Returns:
            (ids, lengths): intp arrays; text i's ids are ``ids[sum(lengths[:i]):][:lengths[i]]``.
        """
        if self.max_length is not None and any(len(t) > self.max_length for t in texts):
            # a text of at most max_length characters is never cut (every token is >= 1 character)
            cut = self._cut(self.max_length)
            texts = [t[:cut] for t in texts]
        words = [self._words(t) for t in texts] if self._by_words else [None] * len(texts)
        rest = [t for t, w in zip(texts, words, strict=True) if w is None]
        with self.lock:
            read = [e.ids for e in self.tokenizer.encode_batch_fast(rest, add_special_tokens=False)] if rest else []
            known = self._word_ids
            seen = set().union(*(w for w in words if w))
            new = sorted(seen - known.keys())
            if new:
                if len(known) + len(new) > MAX_WORDS:  # a new memory: another thread may be reading the old
                    known = self._word_ids = {}
                    new = sorted(seen)
                for word, enc in zip(new, self.tokenizer.encode_batch_fast(new, add_special_tokens=False), strict=True):
                    known[word] = enc.ids
        # pieces: each word's ids (a text read by the tokenizer is one piece); per text its pieces
        if rest:
            pieces: list[list[int]] = []
            per_text = np.ones(len(texts), dtype=np.intp)
            read_rows = iter(read)
            for i, w in enumerate(words):
                if w is None:
                    pieces.append(next(read_rows))
                else:
                    pieces.extend(map(known.__getitem__, w))
                    per_text[i] = len(w)
        else:
            every = cast("list[list[str]]", words)  # each text was split into words
            pieces = list(map(known.__getitem__, chain.from_iterable(every)))
            per_text = np.fromiter(map(len, every), dtype=np.intp, count=len(texts))
        piece_ends = np.cumsum(np.fromiter(map(len, pieces), dtype=np.intp, count=len(pieces)))
        flat = np.fromiter(chain.from_iterable(pieces), dtype=np.intp, count=int(piece_ends[-1]) if len(pieces) else 0)
        ends = np.concatenate([[0], piece_ends])[np.cumsum(per_text)]
        lengths = np.diff(ends, prepend=0)
        if self.max_length is not None or self.unk_token_id is not None:
            # the tokenizer's truncation (a read text is cut already), then the unknowns go
            position = np.arange(len(flat)) - np.repeat(ends - lengths, lengths)
            keep = flat != self.unk_token_id if self.unk_token_id is not None else np.ones(len(flat), bool)
            if self.max_length is not None:
                keep &= position < self.max_length
            if not keep.all():
                lengths = np.bincount(np.repeat(np.arange(len(texts)), lengths)[keep], minlength=len(texts))
                flat = flat[keep]
        return flat, lengths.astype(np.intp)

    def _words(self, text: str) -> list[str] | None:
        """The pre-tokeniser's words of an ASCII text, None for any other (or one holding an added
        token such as ``[UNK]``, which the tokenizer matches before normalising)."""
        if not text.isascii():
            return None
        lower = text.lower()
        if any(a in text or a in lower for a in self._added):
            return None
        return _ASCII_WORDS.findall(lower if lower.isprintable() else lower.translate(_CONTROL))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Mean of each text's token rows (zeros for a text with no known token), normalised if the
        model says so: ``StaticModel.encode`` for a plain model.

        Args:
            texts: the texts.

        Returns:
            (len(texts), dim) array of the embedding's dtype.
        """
        flat, lengths = self.token_rows(texts)
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(lengths), self.dim), dtype=dtype)
        if len(lengths) >= BULK and self.embedding.dtype in (np.float16, np.float32):
            if self._matrix32 is None:
                self._matrix32 = np.asarray(self.embedding, dtype=np.float32)
            _pool_in_token_order(self._matrix32, flat, lengths, out)
        else:
            starts = np.cumsum(lengths) - lengths
            for length in set(lengths.tolist()) - {0}:  # np.unique imports numpy.ma: a cold route's ~20 ms
                rows = np.flatnonzero(lengths == length)
                out[rows] = self.embedding[flat[starts[rows, None] + np.arange(length)]].mean(axis=1)
        if self.normalize:
            out32 = out.astype(np.float32)
            return (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
        return out


def _pool_in_token_order(matrix: np.ndarray, flat: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:
    """numpy's float16 ``mean`` of each text's rows from a float32 copy of the matrix, bit for bit.

    numpy sums a float16 mean in float32, token by token in order from +0, and divides by the
    count. Here every text is summed at once: the texts are ordered longest first, and the j-th
    token of each text that has one is added in the j-th step (one gather of rows per step rather
    than per length and step). A text without tokens keeps its zero row.

    Args:
        matrix: the float32 (vocabulary, dim) matrix.
        flat: every text's token ids in turn (:meth:`StaticModelFile.token_rows`).
        lengths: each text's number of ids.
        out: (len(lengths), dim) array the means are written into (cast to its dtype).
    """
    order = np.argsort(-lengths, kind="stable")
    order = order[:np.count_nonzero(lengths)]
    if not len(order):
        return
    starts = (np.cumsum(lengths) - lengths)[order]
    longest = np.bincount(lengths[order])[::-1].cumsum()[::-1]  # longest[j]: texts with >= j tokens
    total = np.zeros((len(order), matrix.shape[1]), np.float32)  # from +0, as numpy's sum
    for j in range(1, len(longest)):
        have = int(longest[j])  # the first `have` texts (longest first) have a j-th token
        total[:have] += matrix[flat[starts[:have] + (j - 1)]]
    np.true_divide(total, lengths[order][:, None], out=total, casting="unsafe")
    out[order] = total
