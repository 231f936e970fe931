"""tiled_attention against the reference scaled_dot_product_attention.

The oracle is the reference (itself checked against torch in test_attention):
float64 agreement within 1e-12 on random shapes, batch/head axes, n_q != n_k,
masks of every kind and block sizes that do not divide the lengths. Plus the two
things only the tiled path promises: key blocks that are fully masked are never
read, and no n_q × n_k array is ever allocated.
"""

import tracemalloc

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.row_blocks import fast_softmax

TOL = 1e-12


def qkv(rng, batch_q, batch_k, n_q, n_k, d_k=8, d_v=5, dtype=np.float64):
    q = rng.standard_normal(batch_q + (n_q, d_k)) * 2
    k = rng.standard_normal(batch_k + (n_k, d_k)) * 2
    v = rng.standard_normal(batch_k + (n_k, d_v))
    return q.astype(dtype), k.astype(dtype), v.astype(dtype)


def reference(q, k, v, mask=None):
    return mt.scaled_dot_product_attention(q, k, v, mask)[0]


SHAPES = [  # batch of q, batch of k/v, n_q, n_k, block_size
    ((), (), 1, 1, 4),
    ((), (), 7, 13, (3, 5)),
    ((2,), (2,), 33, 17, (8, 4)),
    ((2, 3), (2, 3), 20, 50, (7, 11)),
    ((2, 3), (1, 3), 16, 16, 16),  # k, v broadcast over the first axis
    ((4,), (), 9, 31, (2, 1000)),  # one key block longer than n_k
    ((), (), 300, 200, (64, 64)),
]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch_q, batch_k, n_q, n_k, block", SHAPES)
def test_equals_reference(batch_q, batch_k, n_q, n_k, block, threads):
    rng = np.random.default_rng(n_q * 1000 + n_k)
    q, k, v = qkv(rng, batch_q, batch_k, n_q, n_k)
    out = mt.tiled_attention(q, k, v, block_size=block, threads=threads)
    assert out.shape == reference(q, k, v).shape
    assert np.max(np.abs(out - reference(q, k, v))) < TOL


@pytest.mark.parametrize("n_q, n_k", [(1, 1), (10, 10), (37, 37), (12, 40), (40, 12)])
@pytest.mark.parametrize("block", [1, (4, 3), (16, 16), (64, 8)])
def test_causal_equals_reference_with_causal_mask(n_q, n_k, block):
    rng = np.random.default_rng(7)
    q, k, v = qkv(rng, (2,), (2,), n_q, n_k)
    want = reference(q, k, v, mt.causal_mask(n_q, n_k))
    assert np.max(np.abs(mt.tiled_attention(q, k, v, causal=True, block_size=block) - want)) < TOL
    # the same mask passed as an array gives the same answer
    got = mt.tiled_attention(q, k, v, mt.causal_mask(n_q, n_k), block_size=block)
    assert np.max(np.abs(got - want)) < TOL


def test_causal_never_reads_future_key_blocks():
    """Keys after the last query of a block are skipped: NaN there cannot leak."""
    rng = np.random.default_rng(1)
    q, k, v = qkv(rng, (), (), 8, 64)
    k[8:] = np.nan
    v[8:] = np.nan
    out = mt.tiled_attention(q, k, v, causal=True, block_size=(4, 8))
    assert np.all(np.isfinite(out))
    want = reference(q, k[:8], v[:8], mt.causal_mask(8, 8))
    assert np.max(np.abs(out - want)) < TOL


def test_fully_masked_key_blocks_are_skipped():
    """A bool mask whose tile is all False skips the tile (padding beyond a block edge)."""
    rng = np.random.default_rng(2)
    q, k, v = qkv(rng, (2,), (2,), 6, 32)
    lengths = [8, 16]
    k[0, 8:] = k[1, 16:] = np.nan
    v[0, 8:] = v[1, 16:] = np.nan
    out = mt.tiled_attention(q, k, v, mt.padding_mask(lengths, 32), block_size=(4, 8))
    assert np.all(np.isfinite(out))
    for b, n in enumerate(lengths):
        assert np.max(np.abs(out[b] - reference(q[b], k[b, :n], v[b, :n]))) < TOL


@pytest.mark.parametrize("kind", ["bool", "padding", "float", "float_inf", "list"])
@pytest.mark.parametrize("block", [(3, 4), (5, 64)])
def test_masks_equal_reference(kind, block):
    rng = np.random.default_rng(3)
    q, k, v = qkv(rng, (3, 2), (3, 2), 11, 19)
    if kind == "bool":
        mask = rng.random((3, 2, 11, 19)) < 0.6
    elif kind == "padding":
        mask = mt.padding_mask([19, 4, 0], 19)[:, None]  # (3, 1, 1, 19): over heads and queries
    elif kind == "float":
        mask = rng.standard_normal((11, 19))
    elif kind == "float_inf":
        mask = np.where(rng.random((2, 11, 19)) < 0.5, -np.inf, rng.standard_normal((2, 11, 19)))
    else:
        mask = (rng.random((11, 19)) < 0.5).tolist()
    want = reference(q, k, v, np.asarray(mask))
    got = mt.tiled_attention(q, k, v, mask, block_size=block)
    assert np.max(np.abs(got - want)) < TOL


def test_fully_masked_rows_give_zeros():
    rng = np.random.default_rng(4)
    q, k, v = qkv(rng, (), (), 6, 10)
    mask = rng.random((6, 10)) < 0.5
    mask[[1, 4]] = False
    out = mt.tiled_attention(q, k, v, mask, block_size=(2, 3))
    assert np.all(out[[1, 4]] == 0.0)
    assert np.max(np.abs(out - reference(q, k, v, mask))) < TOL
    # a float mask that is -inf everywhere empties every row
    out = mt.tiled_attention(q, k, v, np.full((6, 10), -np.inf), block_size=4)
    assert np.all(out == 0.0)


def test_float32_stays_float32():
    rng = np.random.default_rng(5)
    q, k, v = qkv(rng, (2,), (2,), 50, 70, dtype=np.float32)
    out = mt.tiled_attention(q, k, v, block_size=(16, 16))
    assert out.dtype == np.float32
    assert np.max(np.abs(out - reference(q, k, v))) < 1e-5


def test_large_scores_do_not_overflow():
    rng = np.random.default_rng(6)
    q, k, v = qkv(rng, (), (), 20, 40)
    q *= 200.0  # scores of order 1e3: exp would overflow without the running max
    out = mt.tiled_attention(q, k, v, block_size=(7, 6))
    assert np.all(np.isfinite(out))
    assert np.max(np.abs(out - reference(q, k, v))) < TOL


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_values_take_the_running_max_path(dtype):
    """Values near the float range: without the running max the sums 2^S·v
    would overflow; the shortcut must not be taken, and the output stays finite."""
    rng = np.random.default_rng(9)
    q, k, v = qkv(rng, (), (), 12, 40, dtype=dtype)
    v *= np.finfo(dtype).max / 100
    out = mt.tiled_attention(q, k, v, block_size=(5, 7))
    assert np.all(np.isfinite(out))
    want = reference(q, k, v)
    assert np.max(np.abs(out - want)) <= (1e-5 if dtype == np.float32 else 1e-12) * np.max(np.abs(v))


def test_never_allocates_the_score_matrix():
    """Peak NumPy memory at T = 4096 stays far below one T×T float64 matrix."""
    T, d = 4096, 16
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((T, d)) for _ in range(3))
    tracemalloc.start()
    try:
        mt.tiled_attention(q, k, v, causal=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < T * T * 8 / 16  # 8 MiB, against the 128 MiB of the T×T matrix


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"block_size": 0}, "block_size"),
        ({"block_size": (4, -1)}, "block_size"),
        ({"threads": 0}, "threads"),
        ({"mask": np.ones((3, 4), dtype=np.int64)}, "bool"),
        ({"mask": np.ones((2, 4), dtype=bool)}, "broadcast"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    rng = np.random.default_rng(0)
    q, k, v = qkv(rng, (), (), 3, 4)
    with pytest.raises(ValueError, match=match):
        mt.tiled_attention(q, k, v, **kwargs)


def test_refuses_torch_input():
    torch = pytest.importorskip("torch")
    q = torch.zeros(3, 4, dtype=torch.float64)
    with pytest.raises(ValueError, match="NumPy-only"):
        mt.tiled_attention(q, q, q)


def test_fast_softmax_overwrite_x():
    """The fast path reuses a NumPy input only when asked to, with the reference's
    numbers to the bit."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 6))
    x_copy = x.copy()
    want = mt.softmax(x)
    got = fast_softmax(x)
    assert np.array_equal(got, want)
    assert np.array_equal(x, x_copy)  # default: the input is untouched
    got = fast_softmax(x, overwrite_x=True)
    assert np.array_equal(got, want) and np.shares_memory(got, x)


def test_fast_softmax_of_torch_is_the_reference():
    """A torch tensor is not written over (autograd): a new tensor, the reference's."""
    torch = pytest.importorskip("torch")
    x = torch.tensor([[0.0, 1.0, -float("inf")], [-float("inf")] * 3],
                     dtype=torch.float64, requires_grad=True)
    x_copy = x.detach().clone()
    got = fast_softmax(x, overwrite_x=True)
    want = torch.softmax(x_copy[:1], dim=-1)
    torch.testing.assert_close(got[:1].detach(), want, rtol=1e-15, atol=0)
    assert torch.all(got[1] == 0)
    assert got.requires_grad and torch.equal(x.detach(), x_copy)


@pytest.mark.parametrize("temperature", [1.0, 2.5, float("inf")])
@pytest.mark.parametrize("overwrite", [False, True])
def test_softmax_in_row_blocks_equals_one_pass(temperature, overwrite):
    """A large NumPy array is done in cache-sized row blocks: same numbers as one pass."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 400, 1000)) * 5  # 9.6 MB, above the blocking threshold
    x[0, 7] = -np.inf  # a fully masked row
    x[1, 3, ::2] = -np.inf
    x[2, 5, 9] = np.nan
    xs = x / temperature if temperature != float("inf") else np.where(np.isfinite(x), 0.0, x)
    m = np.max(xs, axis=-1, keepdims=True)
    e = np.exp(xs - np.where(m == -np.inf, 0.0, m))
    z = e.sum(axis=-1, keepdims=True)
    want = e / np.where(z == 0.0, 1.0, z)
    np.testing.assert_allclose(mt.softmax(x, temperature=temperature), want,
                               rtol=1e-14, atol=1e-300)
    x_in = xs.copy()
    got = fast_softmax(x_in, overwrite_x=overwrite)
    assert got.shape == x.shape
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)
    assert np.all(got[0, 7] == 0.0) and np.all(np.isnan(got[2, 5]))
    if not overwrite:
        assert np.array_equal(x_in, xs, equal_nan=True)


def test_the_tiled_backward_refuses_zero_threads():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 3)) for _ in range(3))
    out, lse = mt.tiled_attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match="threads must be >= 1, got 0"):
        mt.tiled_attention_backward(q, k, v, out, lse, out, threads=0)
