"""Entity spans of BIO tags, and the scores of a tagger on them.

WNUT-16's tag set (`TAGS`: `O`, then `B-` and `I-` of its ten types), the spans of a tag
sequence with conlleval's rules (`extract_spans`, notebook 06's exercise), span-level
precision, recall and F1 as seqeval and conlleval count them (`precision_recall_f1`,
notebook 06's exercise) and a table of them (`report_table`), and the most probable tag
sequence that keeps the BIO rules (`bio_transitions`, `decode_bio`). Plain Python and
NumPy: no TensorFlow. `embeddings_course.ner` re-exports every name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

ENTITY_TYPES = ("company", "facility", "geo-loc", "movie", "musicartist", "other", "person",
                "product", "sportsteam", "tvshow")
TAGS = ("O",) + tuple(f"{p}-{t}" for t in ENTITY_TYPES for p in ("B", "I"))
TAG_INDEX = {tag: i for i, tag in enumerate(TAGS)}


def extract_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entity spans `(type, start, end)` of one BIO tag sequence, `end` exclusive.

    Library version of notebook 06's exercise `extract_spans`.

    conlleval's rules: `B-x` opens a span; `I-x` continues a span of type x and
    opens one after `O` or another type; `O` closes.
    """
    spans = []
    kind, start = None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, _, tag_type = tag.partition("-")
        continues = prefix == "I" and tag_type == kind
        if kind is not None and not continues:
            spans.append((kind, start, i))
            kind = None
        if prefix == "B" or (prefix == "I" and not continues):
            kind, start = tag_type, i
    return spans


def _prf(correct: int, predicted: int, true: int) -> dict[str, float]:
    precision = correct / predicted if predicted else 0.0
    recall = correct / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "support": true}


def precision_recall_f1(true_tags, pred_tags) -> dict:
    """Span-level scores of predicted tag sequences, as seqeval (default mode) and conlleval.

    Library version of notebook 06's exercise `precision_recall_f1`.

    true_tags, pred_tags: lists of sentences, each a list of BIO tags.
    Returns {"precision", "recall", "f1", "support"} (micro-averaged over all spans)
    and "per_type": {type: the same four}. A span counts as correct when its type,
    start and end all match; a ratio with nothing to divide by is 0.
    """
    if len(true_tags) != len(pred_tags):
        raise ValueError(f"{len(true_tags)} true sentences but {len(pred_tags)} predicted")
    true_spans, pred_spans = set(), set()
    for k, (t, p) in enumerate(zip(true_tags, pred_tags, strict=True)):
        if len(t) != len(p):
            raise ValueError(f"sentence {k}: {len(t)} true tags but {len(p)} predicted")
        true_spans |= {(k,) + s for s in extract_spans(t)}
        pred_spans |= {(k,) + s for s in extract_spans(p)}
    correct = true_spans & pred_spans
    report = _prf(len(correct), len(pred_spans), len(true_spans))
    types = sorted({s[1] for s in true_spans | pred_spans})
    report["per_type"] = {
        kind: _prf(sum(s[1] == kind for s in correct), sum(s[1] == kind for s in pred_spans),
                   sum(s[1] == kind for s in true_spans))
        for kind in types
    }
    return report


def bio_transitions(tags: Sequence[str] = TAGS) -> np.ndarray:
    """`allowed[i, j]`: may tag `j` follow tag `i` in a BIO sequence? Row `len(tags)` is the
    start of a sentence. `I-x` may only follow `B-x` or `I-x`; everything else may follow
    anything."""
    allowed = np.ones((len(tags) + 1, len(tags)), bool)
    for j, tag in enumerate(tags):
        if tag.startswith("I-"):
            kind = tag[2:]
            allowed[:, j] = [t in (f"B-{kind}", f"I-{kind}") for t in tags] + [False]
    return allowed


def decode_bio(logits, lengths, allowed=None) -> np.ndarray:
    """The most probable tag ids (batch, time) under the BIO rules (`bio_transitions`).

    A Viterbi search over the per-token log-softmax of `logits` (batch, time, tags) with
    no learned transitions: the sequence maximising the product of the token
    probabilities among those where no `I-x` follows `O` or another type (the spans that
    conlleval would otherwise open). Positions at and after `lengths` get 0.
    """
    logits = np.asarray(logits, np.float64)
    allowed = bio_transitions() if allowed is None else allowed
    batch, width, num_tags = logits.shape
    out = np.zeros((batch, width), np.int64)
    if width == 0:
        return out
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    penalty = np.where(allowed, 0.0, -np.inf)
    lengths = np.asarray(lengths)
    score = penalty[-1][None, :] + log_p[:, 0]  # (batch, tags)
    back = np.zeros((batch, width, num_tags), np.int64)
    for t in range(1, width):
        candidates = score[:, :, None] + penalty[None, :-1, :]  # (batch, prev, next)
        best_prev = candidates.argmax(1)
        new_score = np.take_along_axis(candidates, best_prev[:, None, :], 1)[:, 0] + log_p[:, t]
        running = (t < lengths)[:, None]
        score = np.where(running, new_score, score)
        back[:, t] = np.where(running, best_prev, np.arange(num_tags)[None, :])
    last = score.argmax(-1)
    for t in range(width - 1, -1, -1):
        out[:, t] = last
        last = np.take_along_axis(back[:, t], last[:, None], 1)[:, 0]
    out[np.arange(width)[None, :] >= lengths[:, None]] = 0
    return out


def report_table(report: dict) -> str:
    """A per-type precision / recall / F1 / support table (text), micro average last."""
    lines = [f"{'type':<12} {'precision':>9} {'recall':>7} {'F1':>6} {'support':>7}"]
    rows = list(report["per_type"].items()) + [("micro avg", report)]
    for kind, r in rows:
        lines.append(f"{kind:<12} {r['precision']:>9.3f} {r['recall']:>7.3f} {r['f1']:>6.3f} "
                     f"{r['support']:>7d}")
    return "\n".join(lines)
