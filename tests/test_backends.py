"""One set of equations, several array libraries.

* NumPy and torch give the same numbers (float64);
* on torch's ``meta`` device every function runs: a tensor made without the
  input's device would be a CPU tensor, and a CPU tensor meeting a meta tensor
  is an error, so this proves no tensor is created on the wrong device;
* ``array-api-strict`` (a minimal, strict Array API library) runs the core;
* float16 and bfloat16 on torch stay within dtype-aware tolerances of the
  float64 reference (1e-2 and 5e-2);
* ``import mini_transformer`` does not import torch.
"""

import subprocess
import sys

import array_api_strict as xps
import numpy as np
import pytest
import torch

import mini_transformer as mt
from helpers import max_abs, t64
from mini_transformer.torch import Encoder, MultiHeadAttention

D, H, FF = 8, 2, 16


def inputs(rng):
    """NumPy float64 inputs for every function, and a mask that leaves a row empty."""
    return dict(
        x=rng.normal(size=(2, 4, D)),
        memory=rng.normal(size=(2, 6, D)),
        layers=[mt.EncoderLayerParams.random(rng, d_model=D, n_heads=H, d_ff=FF)
                for _ in range(2)],
        dec_layers=[mt.DecoderLayerParams.random(rng, d_model=D, n_heads=H, d_ff=FF)
                    for _ in range(2)],
        mask=mt.padding_mask([4, 0], 4) & mt.causal_mask(4),  # sequence 2 fully masked
        cross_mask=mt.padding_mask([6, 3], 6),
        fmask=rng.normal(size=(4, 4)),
    )


def calls(a):
    """Every public function applied to the inputs ``a`` (arrays of one library)."""
    p, d = a["layers"][0], a["dec_layers"][0]
    x = a["x"]
    model = mt.TransformerParams(  # with final norms, as torch.nn.Transformer
        None, tuple(a["layers"]), tuple(a["dec_layers"]), p.norm1, d.norm3)
    return {
        "softmax": mt.softmax(x, temperature=0.5),
        "softmax-axis": mt.softmax(x, axis=1),
        "log_sum_exp": mt.log_sum_exp(x),
        "attention": mt.scaled_dot_product_attention(x, x, x, a["mask"])[0],
        "attention-weights": mt.scaled_dot_product_attention(x, x, x, a["fmask"])[1],
        "multi_head": mt.multi_head_attention(x, p.attn, a["mask"])[0],
        "cross": mt.multi_head_attention(x, p.attn, a["cross_mask"], memory=a["memory"])[0],
        "feed_forward": mt.feed_forward(x, p.ffn),
        "layer_norm": mt.layer_norm(x, p.norm1.gamma, p.norm1.beta),
        "encoder_layer": mt.encoder_layer(x, p, a["mask"]),
        "encoder_layer-pre": mt.encoder_layer(x, p, a["fmask"], norm_first=True),
        "encoder": mt.encoder(x, a["layers"], a["mask"]),
        "decoder_layer": mt.decoder_layer(x, a["memory"], d, a["mask"], a["cross_mask"]),
        "decoder_layer-pre": mt.decoder_layer(x, a["memory"], d, a["fmask"], norm_first=True),
        "decoder": mt.decoder(x, a["memory"], a["dec_layers"], a["mask"], a["cross_mask"]),
        "encoder_decoder": mt.encoder_decoder(a["memory"], x, model, a["cross_mask"],
                                              a["mask"], a["cross_mask"]),
    }


def convert(a, f, masks_too=False):
    """The inputs with every array passed through ``f`` (masks stay NumPy unless asked)."""
    out = {}
    for key, value in a.items():
        if key.endswith("layers"):
            out[key] = [p.map(f) for p in value]
        elif key.endswith("mask") and not masks_too:
            out[key] = value
        else:
            out[key] = f(value)
    return out


def test_numpy_and_torch_agree(rng):
    a = inputs(rng)
    ref = calls(a)
    got = calls(convert(a, t64))
    got_torch_masks = calls(convert(a, torch.as_tensor, masks_too=True))
    for name in ref:
        assert isinstance(got[name], torch.Tensor) and got[name].dtype == torch.float64
        assert np.isfinite(ref[name]).all(), name
        assert max_abs(got[name], ref[name]) < 1e-12, name
        assert max_abs(got_torch_masks[name], ref[name]) < 1e-12, name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_every_function_runs_on_the_meta_device(dtype, rng):
    a = inputs(rng)
    ref = calls(a)
    meta = convert(a, lambda v: torch.as_tensor(v, dtype=dtype, device="meta"))
    got = calls(meta)
    # torch masks already on the meta device too
    got.update({f"{k} (meta mask)": v for k, v in calls(convert(
        a, lambda v: torch.as_tensor(v, device="meta"), masks_too=True)
        | {k: meta[k] for k in ("x", "memory", "layers", "dec_layers")}).items()})
    for name, out in got.items():
        assert out.device.type == "meta", name
        assert out.dtype == dtype, name
        assert tuple(out.shape) == ref[name.split(" ")[0]].shape, name
    out, w = mt.multi_head_attention(meta["x"], meta["layers"][0].attn, mt.causal_mask(4))
    assert w.device.type == "meta" and tuple(w.shape) == (2, H, 4, 4)


def test_torch_modules_run_on_the_meta_device():
    # the nn.Module wrappers too (parameters made on meta, fused path included)
    x = torch.empty(2, 5, 8, device="meta")
    enc = Encoder(2, 8, 2, device="meta")
    assert enc(x, mt.padding_mask([5, 2], 5)).device.type == "meta"
    mha = MultiHeadAttention(8, 2, device="meta", fused=True)
    out, _ = mha(x, mask=mt.causal_mask(5))
    assert out.device.type == "meta" and out.shape == (2, 5, 8)


def test_array_api_strict_runs_the_core(rng):
    a = inputs(rng)
    ref = calls(a)
    got = calls(convert(a, xps.asarray))
    for name in ref:
        assert type(got[name]).__module__.startswith("array_api_strict"), name
        assert max_abs(np.asarray(got[name]), ref[name]) < 1e-12, name


@pytest.mark.parametrize("dtype,tol", [(torch.float16, 1e-2), (torch.bfloat16, 5e-2)])
def test_half_precision_within_tolerance_of_float64(dtype, tol, rng):
    # inputs and weights rounded to the low dtype once; the float64 reference
    # computes with those same rounded values, so the gap is the arithmetic's
    a = inputs(rng)
    a["x"] = a["x"] * 0.5
    low = convert(a, lambda v: torch.as_tensor(v).to(dtype))
    ref = calls(convert(low, lambda v: v.double()))
    got = calls(low)
    for name in ref:
        assert got[name].dtype == dtype, name
        err = max_abs(got[name], ref[name])
        assert err < tol, (name, err)
    # and the documented edge cases survive the low precision
    for name in ("attention", "encoder_layer", "encoder"):
        assert torch.isfinite(got[name]).all(), name


def test_float32_numpy_stays_float32(rng):
    a = convert(inputs(rng), lambda v: np.asarray(v, dtype=np.float32))
    for name, out in calls(a).items():
        assert out.dtype == np.float32, name


def test_positional_encoding_is_numpy_and_moves_to_any_library():
    pe = mt.positional_encoding(4, D)
    assert isinstance(pe, np.ndarray)
    x = torch.zeros(4, D, dtype=torch.float16, device="meta")
    y = x + torch.as_tensor(pe, device=x.device, dtype=x.dtype)
    assert y.device.type == "meta" and y.dtype == torch.float16


def test_import_does_not_import_torch():
    code = ("import sys, mini_transformer as mt, numpy as np; "
            "mt.encoder(np.ones((2, 4)), [mt.EncoderLayerParams.random("
            "np.random.default_rng(0), d_model=4, n_heads=2)]); "
            "print('torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"
