"""Translation end to end: texts in, texts out, and the scores the paper reports
(BLEU, Table 2) and the ones this task needs (exact match, chrF). BLEU and chrF are
``sacrebleu``'s (pinned): never a hand-written BLEU."""

from __future__ import annotations

import numpy as np

from .attention import padding_mask
from .batching import pad_sequences
from .decoding import beam_search, greedy_decode


def translate(texts, params, bpe, beam_size=4, alpha=0.6, batch_size=512,
              max_len=None):
    """Each text encoded with ``bpe`` (then EOS), decoded by ``beam_search``
    (§6.1's beam 4, α = 0.6; ``beam_size=None`` decodes greedily), and decoded
    back to text. Sources are batched by length (padding masked) and the answers
    returned in the input order. max_len: None means n_src + 50 per batch.
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    src = [bpe.encode(t) + [bpe.eos_id] for t in texts]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    out = [None] * len(src)
    for start in range(0, len(order), batch_size):
        rows = order[start: start + batch_size]
        batch = pad_sequences([src[i] for i in rows], bpe.pad_id)   # (b, n_src)
        mask = padding_mask([len(src[i]) for i in rows], batch.shape[1])
        n = batch.shape[1] + 50 if max_len is None else max_len
        if beam_size is None:
            tokens = greedy_decode(batch, params, n, bpe.bos_id, bpe.eos_id, mask)
        else:
            tokens, _ = beam_search(batch, params, n, bpe.bos_id, bpe.eos_id, mask,
                                    beam_size, alpha)
        tokens = np.asarray(tokens.cpu() if hasattr(tokens, "cpu") else tokens)
        for i, row in zip(rows, tokens):
            ids = list(row[1:])
            out[i] = bpe.decode(ids[: ids.index(bpe.eos_id)] if bpe.eos_id in ids
                                else ids)
    return out


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
