# Mistake: scores tokens (each non-O tag that matches), not entity spans.
def precision_recall_f1(true_tags, pred_tags):
    def scores(kind=None):
        pairs = [(t, p) for ts, ps in zip(true_tags, pred_tags) for t, p in zip(ts, ps)]
        def of(tag):
            return tag != "O" and (kind is None or tag[2:] == kind)
        true = sum(of(t) for t, _ in pairs)
        pred = sum(of(p) for _, p in pairs)
        correct = sum(of(t) and t == p for t, p in pairs)
        prec = correct / pred if pred else 0.0
        rec = correct / true if true else 0.0
        f = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        return {"precision": prec, "recall": rec, "f1": f, "support": true}

    result = scores()
    kinds = sorted({t[2:] for ts in true_tags + pred_tags for t in ts if t != "O"})
    result["per_type"] = {k: scores(k) for k in kinds}
    return result
