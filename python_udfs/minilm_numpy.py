"""all-MiniLM-L6-v2 forward pass in numpy, for a fast cold start.

Routing one question needs one short forward pass, but importing torch + transformers +
sentence-transformers costs 5-6 s before the first vector. This module computes the same
vectors from the same weights (``model.safetensors``, memory-mapped: :mod:`python_udfs.tensors`) with the
same tokenizer (``tokenizer.json`` through the Rust ``tokenizers`` package): BERT embeddings, 6
encoder layers (12 heads, exact erf GELU, LayerNorm eps 1e-12), mean pooling over the attention
mask, L2 normalisation, sequences cut to 256 word pieces as sentence-transformers does.
``tests/unit/test_minilm_numpy.py`` checks it against sentence-transformers (cosine >= 0.99999).
Builds embed thousands of documents; there the torch model stays (batched, multi-threaded).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAX_SEQ_LENGTH = 256
LAYERS = 6
HEADS = 12
EPS = 1e-12
WARM_CALLS = 3  # batches encoded before the linear weights are copied transposed (_linear)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * weight + bias


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz & Stegun 7.1.26), below float32's resolution of the
    activations; importing scipy.special for it would cost 0.3 s of every cold start."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)


class NumpyMiniLM:
    """The MiniLM sentence encoder without torch.

    Args:
        model_dir: the sentence-transformers model directory (``model.safetensors``, ``tokenizer.json``).
    """

    def __init__(self, model_dir: str | Path) -> None:
        from tokenizers import Tokenizer

        from python_udfs.tensors import mapped_tensors

        model_dir = Path(model_dir)
        # views of the mapped file, nothing copied; linear weights stay [out, in] (``_linear``)
        self.w = {k: v for k, v in mapped_tensors(model_dir / "model.safetensors").items()
                  if k != "embeddings.position_ids"}
        if any(v.dtype != np.float32 for v in self.w.values()):
            raise ValueError(f"{model_dir}/model.safetensors: expected float32 weights")
        self._wt: dict[str, np.ndarray] = {}  # linear weights transposed, once warm (_linear)
        self._calls = 0
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        # One 2-D GEMM over every token of the batch, not numpy's loop of per-text products for a
        # 3-D ``x @ W`` (1,000 questions in batches of 64: 33.5 s -> 27.9 s, one BLAS thread).
        # x @ W.T: the [out, in] weight as stored (a view of the mapped file) until the model has
        # served WARM_CALLS batches, then a transposed contiguous copy (~1.5x faster for a
        # question's few tokens; the copies cost ~50 ms once). Both give bit-identical vectors.
        w = self._wt.get(name)
        if w is None:
            w = self.w[f"{name}.weight"].T
        return (x.reshape(-1, x.shape[-1]) @ w + self.w[f"{name}.bias"]).reshape(*x.shape[:-1], w.shape[1])

    def _transpose(self) -> None:
        """Keep every linear weight transposed and contiguous (what a long-lived process wants)."""
        self._wt = {k[:-len(".weight")]: np.ascontiguousarray(v.T) for k, v in self.w.items()
                    if k.endswith(".weight") and v.ndim == 2 and not k.startswith("embeddings.")}

    def _layer(self, x: np.ndarray, mask_bias: np.ndarray, i: int) -> np.ndarray:
        p = f"encoder.layer.{i}"
        batch, seq, hidden = x.shape
        head = hidden // HEADS

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(batch, seq, HEADS, head).transpose(0, 2, 1, 3)

        q = split(self._linear(x, f"{p}.attention.self.query"))
        k = split(self._linear(x, f"{p}.attention.self.key"))
        v = split(self._linear(x, f"{p}.attention.self.value"))
        # a float32 scale: numpy 2 promotes float32 by a float64 scalar (np.sqrt's) to float64, which
        # made the rest of the pass float64 GEMMs over weights converted on every call (~2x the time)
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head)) + mask_bias
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = _layer_norm(x + self._linear(ctx, f"{p}.attention.output.dense"),
                        self.w[f"{p}.attention.output.LayerNorm.weight"], self.w[f"{p}.attention.output.LayerNorm.bias"])
        inter = _gelu(self._linear(x, f"{p}.intermediate.dense"))
        return _layer_norm(x + self._linear(inter, f"{p}.output.dense"),
                           self.w[f"{p}.output.LayerNorm.weight"], self.w[f"{p}.output.LayerNorm.bias"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised sentence vectors, shape (len(texts), 384), float32.

        Args:
            texts: the texts (non-empty strings).

        Returns:
            The vectors, as sentence-transformers' ``encode(..., normalize_embeddings=True)`` gives them.
        """
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return self.encode_tokens(*self.tokenize(texts))

    def tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word-piece ids and attention mask of a batch, padded to its longest text.

        Args:
            texts: the texts (non-empty strings, at least one).

        Returns:
            ``(ids, mask)``: int64 and float32 arrays of shape (len(texts), longest). The vectors
            depend on these alone: texts that differ only in what the tokenizer normalises (case,
            accents, spacing) have the same ids.
        """
        enc = self.tokenizer.encode_batch(list(texts))
        return (np.array([e.ids for e in enc], dtype=np.int64),
                np.array([e.attention_mask for e in enc], dtype=np.float32))

    def encode_tokens(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The forward pass over a tokenized batch (:meth:`tokenize`).

        Args:
            ids: word-piece ids, (batch, sequence).
            mask: attention mask, same shape.

        Returns:
            L2-normalised vectors, (batch, 384) float32.
        """
        self._calls += 1
        if self._calls == WARM_CALLS:
            self._transpose()
        seq = ids.shape[1]
        x = (self.w["embeddings.word_embeddings.weight"][ids]
             + self.w["embeddings.position_embeddings.weight"][:seq][None]
             + self.w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, self.w["embeddings.LayerNorm.weight"], self.w["embeddings.LayerNorm.bias"])
        mask_bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(LAYERS):
            x = self._layer(x, mask_bias, i)
        pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (pooled / norms).astype(np.float32)
