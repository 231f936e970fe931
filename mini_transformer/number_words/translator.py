"""One call from Python: English number words as people type them, in German.

    >>> from mini_transformer.number_words import translate
    >>> german = translate(["Forty Two", "a hundred and one", "forty apples"])
    >>> german[:2], german[2].kind
    (['zweiundvierzig', 'einhunderteins'], 'word')

Each text is read by ``normalize`` (any case, "forty two", "a hundred", ...),
then translated by the model (loaded once, on the first call, and kept). A text
that is not a number does not stop the others: its place in the answer holds the
``NotANumber`` it raised (a ValueError whose ``kind`` says why), the way
``asyncio.gather(..., return_exceptions=True)`` answers.
"""

from __future__ import annotations

import functools
from pathlib import Path

from ..translation import translate as _translate_ids
from .files import load_model
from .normalize import NotANumber, normalize


@functools.lru_cache(maxsize=4)
def _model(path):
    return load_model(path)


def translate(texts, beam_size=4, alpha=0.6, model=None):
    """The German of each text, in order: a list with, for each text, its
    translation (a str) or the ``NotANumber`` it raised.

    texts: a str (one text) or an iterable of str; anything else in it raises
    TypeError before any work. beam_size: the beam (the paper's 4), or None for
    greedy decoding; alpha: the length penalty's exponent (the paper's 0.6).
    model: None for the model the package ships, a folder or ``.npz`` written by
    ``train`` (``load_model``; each is loaded once and kept), or a
    ``(params, bpe)`` pair.
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    for t in texts:
        if not isinstance(t, str):
            normalize(t)                    # the TypeError naming what it is
    if beam_size is not None and (isinstance(beam_size, bool)
                                  or not isinstance(beam_size, int) or beam_size < 1):
        raise ValueError(f"beam_size must be an integer >= 1 or None, got "
                         f"{beam_size!r}")
    if isinstance(model, tuple):
        params, bpe = model
    else:
        params, bpe = _model(None if model is None else Path(model).resolve())
    out, readable = [], {}
    for i, text in enumerate(texts):
        try:
            readable[i] = normalize(text)
        except NotANumber as e:
            out.append(e)
            continue
        out.append(None)
    if readable:
        german = _translate_ids(list(readable.values()), params, bpe,
                                beam_size=beam_size, alpha=alpha)
        for i, g in zip(readable, german):
            out[i] = g
    return out
