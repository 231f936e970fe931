"""Figures the chapters share, drawn by code from the package's own structures.

``figure1(params, src, tgt)`` redraws the paper's Figure 1 (the encoder-decoder
Transformer) from a ``mini_transformer.TransformerParams``: one box per sub-layer found
in each layer's parameter container, and on every arrow the shape of the array that the
package computes there for the token ids ``src`` and ``tgt``. Imported by the notebooks,
which run with ``book/`` as their working directory: ``import figures``.
"""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Rectangle

import mini_transformer as mt
from mini_transformer.transformer import with_causal

COLORS = {"embed": "#f4c7c3", "attn": "#fbd9a4", "ffn": "#c7dcf4", "norm": "#f7f3b0",
          "linear": "#dccdf0", "softmax": "#c8ebc8"}
FONT = 9                    # points, for every text
SHAPE_COLOR = "tab:blue"
NOTE_COLOR = "darkred"
INCH_PER_UNIT = 0.6         # inches per data unit: text keeps its size at any height
BOX_W = 4.3                 # width of a box
STACK_PAD = 0.32            # grey stack rectangle beyond the boxes
ARROW_H = 0.5               # an arrow between blocks
GAP = 0.3                   # an arrow between sub-layers of one layer
NOTE_GAP = 0.55             # from a stack's outer edge to the notes beside it

EMBEDDING = "embedding E[ids] · √d_model\n+ positional encoding PE"

# What each attention field of a layer's parameters is, in the paper's words.
ATTENTION = {"attn": ("self-attention", "attn"),
             "self_attn": ("masked self-attention", "masked_attn"),
             "cross_attn": ("cross-attention to mem", "cross_attn")}


def trace(params, src, tgt, src_mask=None, tgt_mask=None):
    """The arrays on Figure 1's arrows, in drawing order: {name: array}.

    Runs the model once, ``mt.encode`` and ``mt.decode`` (causal mask, combined with
    ``tgt_mask``; post-LN or pre-LN as the params were made), and reads every layer's
    output from the values their forward keeps (``saved``): ``embed``, each encoder
    layer, the final LayerNorms where the params have them, each decoder layer, the
    tied output projection and the softmax.
    src: (..., n_src) and tgt: (..., n_tgt) token ids; src_mask: a key mask as for
    ``mt.transformer``. The last entry equals ``softmax(mt.transformer(...))``.
    """
    E = params.embedding
    out = {"src ids": src, "X": mt.embed(src, E)}
    enc, dec = {}, {}
    mem = mt.encode(out["X"], params, src_mask, saved=enc)
    out |= _layer_outputs("encoder", enc)
    if params.encoder_norm is not None:
        out["encoder norm"] = mem
    out["mem"] = mem
    out["tgt ids"] = tgt
    out["Y"] = mt.embed(tgt, E)
    self_mask = with_causal(tgt_mask, out["Y"])         # as mt.transformer's
    h = mt.decode(out["Y"], mem, params, self_mask, src_mask, saved=dec)
    out |= _layer_outputs("decoder", dec)
    if params.decoder_norm is not None:
        out["decoder norm"] = h
    out["H"] = h
    out["logits"] = h @ E.T
    out["P"] = mt.softmax(out["logits"], axis=-1)
    return out


def _layer_outputs(stack, saved):
    """{"<stack> layer i": output of layer i}: each layer's output is the next
    one's input, the last one's the stack's output."""
    outputs = [*saved["inputs"][1:], saved["output"]][:len(saved["inputs"])]
    return {f"{stack} layer {i + 1}": a for i, a in enumerate(outputs)}


def sublayers(layer):
    """One (text, role) per box of a layer, read from its parameter fields in order:
    an attention box for each ``MultiHeadParams`` (with h, d_k, d_v), a feed-forward
    box for the ``FeedForwardParams`` (with d_ff), each followed by Add & Norm."""
    boxes = []
    for field in dataclasses.fields(layer):
        p = getattr(layer, field.name)
        if isinstance(p, mt.MultiHeadParams):
            what, role = ATTENTION[field.name]
            sizes = f"h = {p.n_heads}, d_k = {p.d_k}, d_v = {p.d_v}"
            boxes += [(f"{what}\n{sizes}", role), ("Add & Norm", "norm")]
        elif isinstance(p, mt.FeedForwardParams):
            boxes += [(f"feed-forward, d_ff = {p.d_ff}", "ffn"), ("Add & Norm", "norm")]
    return boxes


def _shape(a) -> str:
    return str(tuple(a.shape))


class _Canvas:
    """Boxes, arrows and notes in data units on one Axes."""

    def __init__(self, ax, notes):
        self.ax, self.notes = ax, notes or {}

    def box(self, x, y, text, role, note_x=None):
        lines = text.count("\n") + 1
        h = 0.3 + 0.3 * lines
        kind = "attn" if role.endswith("attn") else role
        self.ax.add_patch(FancyBboxPatch(
            (x - BOX_W / 2, y), BOX_W, h, boxstyle="round,pad=0,rounding_size=0.08",
            fc=COLORS[kind], ec="black", lw=0.8))
        self.ax.text(x, y + h / 2, text, ha="center", va="center", fontsize=FONT)
        if role in self.notes and note_x is not None:
            ha = "right" if note_x < x else "left"
            self.ax.text(note_x, y + h / 2, self.notes[role], ha=ha, va="center",
                         fontsize=FONT, color=NOTE_COLOR, fontweight="bold")
        return y + h

    def arrow(self, x, y0, y1, label=None):
        self.ax.annotate("", xy=(x, y1), xytext=(x, y0),
                         arrowprops=dict(arrowstyle="-|>", lw=1))
        if label:
            self.ax.text(x + 0.12, (y0 + y1) / 2, label, fontsize=FONT, va="center",
                         ha="left", color=SHAPE_COLOR)
        return y1

    def stack(self, x, y, layers, arrays, name, side, all_layers):
        """Layers bottom to top; residuals and labels on ``side`` (-1 left, +1 right).
        Returns the top y and the y of each cross-attention box."""
        drawn = layers if all_layers else layers[:1]
        cross_at = []
        edge = x + side * (BOX_W / 2 + STACK_PAD)          # the stack's outer edge
        xr = x + side * (BOX_W / 2 + STACK_PAD / 2)         # the residual path
        for i, layer in enumerate(drawn):
            y0 = prev = y
            for text, role in sublayers(layer):
                yy = self.arrow(x, prev, prev + GAP)
                if role != "norm":                  # the residual skips this box
                    below = prev + GAP / 2
                top = self.box(x, yy, text, role, note_x=edge + side * NOTE_GAP)
                if role == "cross_attn":
                    cross_at.append((yy + top) / 2)
                if role == "norm":                          # ... into Add & Norm
                    mid = (yy + top) / 2
                    self.ax.plot([x, xr, xr], [below, below, mid], color="grey", lw=1)
                    self.ax.annotate(
                        "", xy=(x + side * BOX_W / 2, mid), xytext=(xr, mid),
                        arrowprops=dict(arrowstyle="-|>", lw=1, color="grey"))
                prev = top
            y = prev + 0.15
            self.ax.add_patch(Rectangle((x - BOX_W / 2 - STACK_PAD, y0),
                                        BOX_W + 2 * STACK_PAD, y - y0,
                                        fc="#f2f2f2", ec="grey", lw=0.8, zorder=0))
            label = (f"{name} layer {i + 1}" if all_layers
                     else f"{name} layer, × N = {len(layers)}")
            self.ax.text(edge + side * 0.12, (y0 + y) / 2, label, rotation=90,
                         ha="right" if side < 0 else "left", va="center", fontsize=FONT,
                         color="dimgrey")
            if i < len(drawn) - 1:
                shape = _shape(arrays[f"{name} layer {i + 1}"])
                y = self.arrow(x, y, y + ARROW_H, shape)
        return y, cross_at


def figure1(params, src, tgt, *, src_mask=None, tgt_mask=None, all_layers=False,
            notes=None, arrays=None):
    """The paper's Figure 1, drawn from ``params`` with the shapes of the arrays that
    the package computes for the token ids ``src`` and ``tgt`` (``trace``).

    all_layers: draw every layer of each stack (else one, marked "× N", as the paper).
    notes: {role: text} written beside every box of that role, for instance the
    chapter that computes it; roles: embed, attn, masked_attn, cross_attn, norm, ffn,
    linear, softmax.
    arrays: a ``trace`` already computed (its names), instead of running the model.
    Returns the Figure.
    """
    if arrays is None:
        arrays = trace(params, src, tgt, src_mask, tgt_mask)
    fig, ax = plt.subplots()
    c = _Canvas(ax, notes)
    xe, xd = 2.5, 8.5                                    # the two columns
    note_e = xe - (BOX_W / 2 + STACK_PAD + NOTE_GAP)     # notes beside the boxes
    note_d = xd + (BOX_W / 2 + STACK_PAD + NOTE_GAP)
    E = params.embedding

    # encoder, left
    y = c.arrow(xe, 0.0, ARROW_H, f"source ids {_shape(arrays['src ids'])}")
    y = c.box(xe, y, EMBEDDING, "embed", note_x=note_e)
    y = c.arrow(xe, y, y + ARROW_H, f"X {_shape(arrays['X'])}")
    y, _ = c.stack(xe, y, params.encoder_layers, arrays, "encoder", -1, all_layers)
    if "encoder norm" in arrays:
        y = c.arrow(xe, y, y + ARROW_H)
        y = c.box(xe, y, "LayerNorm (final)", "norm", note_x=note_e)
    enc_top = c.arrow(xe, y, y + ARROW_H, f"mem {_shape(arrays['mem'])}")

    # decoder, right
    y = c.arrow(xd, 0.0, ARROW_H, f"target ids {_shape(arrays['tgt ids'])}")
    y = c.box(xd, y, EMBEDDING, "embed", note_x=note_d)
    y = c.arrow(xd, y, y + ARROW_H, f"Y {_shape(arrays['Y'])}")
    y, cross_at = c.stack(xd, y, params.decoder_layers, arrays, "decoder", +1,
                          all_layers)
    if "decoder norm" in arrays:
        y = c.arrow(xd, y, y + ARROW_H)
        y = c.box(xd, y, "LayerNorm (final)", "norm", note_x=note_d)
    y = c.arrow(xd, y, y + ARROW_H, f"H {_shape(arrays['H'])}")
    y = c.box(xd, y, "linear: H Eᵀ (the same E)", "linear", note_x=note_d)
    y = c.arrow(xd, y, y + ARROW_H, f"logits {_shape(arrays['logits'])}")
    y = c.box(xd, y, "softmax over the vocabulary", "softmax", note_x=note_d)
    y = c.arrow(xd, y, y + ARROW_H, f"P {_shape(arrays['P'])}")
    ax.text(xd, y + 0.12, "output probabilities of the next token", ha="center",
            va="bottom", fontsize=FONT)
    top = y + 0.5

    # the memory feeds the cross-attention of every decoder layer
    x_bus, y_bus = (xe + xd) / 2, enc_top + 0.1
    ax.plot([xe, xe, x_bus], [enc_top, y_bus, y_bus], color=SHAPE_COLOR, lw=1.2)
    ys = [y_bus] + cross_at
    ax.plot([x_bus, x_bus], [min(ys), max(ys)], color=SHAPE_COLOR, lw=1.2)
    for yc in cross_at:
        ax.annotate("", xy=(xd - BOX_W / 2, yc), xytext=(x_bus, yc),
                    arrowprops=dict(arrowstyle="-|>", color=SHAPE_COLOR, lw=1.2))
    ax.text((xe + xd) / 2, -0.45, f"one matrix E {_shape(E)}: both embeddings "
            "and the linear map", ha="center", va="center", fontsize=FONT,
            style="italic")

    x0 = xe - BOX_W / 2 - (2.0 if notes else 0.8)
    x1 = xd + BOX_W / 2 + (2.0 if notes else 0.8)
    ax.set_xlim(x0, x1)
    ax.set_ylim(-0.75, top)
    ax.axis("off")
    fig.set_size_inches((x1 - x0) * INCH_PER_UNIT, (top + 0.75) * INCH_PER_UNIT)
    return fig
