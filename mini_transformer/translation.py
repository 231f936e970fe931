"""Translation end to end: texts in, texts out, and the scores the paper reports
(BLEU, Table 2) and the ones this task needs (exact match, chrF). BLEU and chrF are
``sacrebleu``'s (pinned): never a hand-written BLEU."""

from __future__ import annotations

import numpy as np

from .attention import padding_mask
from .batching import pad_sequences
from .decoding import beam_search, greedy_decode, length_penalty
from .softmax import log_softmax


def translate(texts, params, bpe, *, beam_size=4, alpha=0.6, batch_size=512,
              max_len=None, return_scores=False):
    """Each text encoded with ``bpe`` (then EOS), decoded by ``beam_search``
    (§6.1's beam 4, α = 0.6; ``beam_size=None`` decodes greedily), and decoded
    back to text. Sources are batched by length (padding masked) and the answers
    returned in the input order. max_len: None means n_src + 50 per batch.
    return_scores: also return each answer's score log P(Y | X) / lp(Y) (the
    beam's ranking; for greedy decoding, its output's log-probability divided by
    the same length penalty, ``alpha`` included), as floats.
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    src = [bpe.encode(t) + [bpe.eos_id] for t in texts]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    out, scores = [None] * len(src), [None] * len(src)
    for start in range(0, len(order), batch_size):
        rows = order[start: start + batch_size]
        batch = pad_sequences([src[i] for i in rows], bpe.pad_id)   # (b, n_src)
        mask = padding_mask([len(src[i]) for i in rows], batch.shape[1])
        n = batch.shape[1] + 50 if max_len is None else max_len
        if beam_size is None:
            tokens, logits = greedy_decode(batch, params, n, bpe.bos_id, bpe.eos_id,
                                           mask, return_logits=True)
            batch_scores = _greedy_scores(_numpy(tokens), _numpy(log_softmax(logits)),
                                          bpe.eos_id, alpha)
        else:
            tokens, batch_scores = beam_search(batch, params, n, bpe.bos_id,
                                               bpe.eos_id, mask, beam_size=beam_size,
                                               alpha=alpha)
        tokens, batch_scores = _numpy(tokens), _numpy(batch_scores)
        for i, row, score in zip(rows, tokens, batch_scores):
            ids = list(row[1:])
            out[i] = bpe.decode(ids[: ids.index(bpe.eos_id)] if bpe.eos_id in ids
                                else ids)
            scores[i] = float(score)
    return (out, scores) if return_scores else out


def _greedy_scores(tokens, log_p, eos, alpha):
    """log P(Y | X) / lp(Y) of greedy outputs: tokens (b, n) from BOS, log_p
    (b, n - 1, vocab) each step's log-probabilities; Y runs to the first EOS,
    included (or to the end)."""
    picked = np.take_along_axis(log_p, tokens[:, 1:, None], axis=-1)[..., 0]
    is_eos = tokens[:, 1:] == eos
    length = np.where(is_eos.any(axis=1), is_eos.argmax(axis=1) + 1, is_eos.shape[1])
    written = np.arange(is_eos.shape[1]) < length[:, None]          # (b, n - 1)
    return np.sum(np.where(written, picked, 0.0), axis=1) / length_penalty(length,
                                                                           alpha)


def _numpy(a):
    return np.asarray(a.cpu() if hasattr(a, "cpu") else a)


def exact_match(hypotheses, references) -> float:
    """The fraction of hypotheses equal to their reference, character for character."""
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references) or not references:
        raise ValueError(f"need as many hypotheses as references (>= 1), got "
                         f"{len(hypotheses)} and {len(references)}")
    return sum(h == r for h, r in zip(hypotheses, references)) / len(references)


def corpus_bleu(hypotheses, references, **kwargs) -> float:
    """sacrebleu's corpus BLEU (0 to 100) with one reference per sentence, its
    default 13a tokenizer unless ``kwargs`` say otherwise."""
    import sacrebleu

    return sacrebleu.corpus_bleu(list(hypotheses), [list(references)], **kwargs).score


def corpus_chrf(hypotheses, references, **kwargs) -> float:
    """sacrebleu's corpus chrF (0 to 100): an F-score of character n-grams, n <= 6."""
    import sacrebleu

    return sacrebleu.corpus_chrf(list(hypotheses), [list(references)], **kwargs).score
