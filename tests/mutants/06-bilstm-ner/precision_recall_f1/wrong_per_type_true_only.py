# Mistake: scores per type only the types of the true spans, so a type that is only
# predicted (a false alarm) gets no entry.
def precision_recall_f1(true_tags, pred_tags):
    true_spans = {(k,) + s for k, tags in enumerate(true_tags) for s in extract_spans(tags)}
    pred_spans = {(k,) + s for k, tags in enumerate(pred_tags) for s in extract_spans(tags)}

    def scores(true, pred):
        correct = len(true & pred)
        p = correct / len(pred) if pred else 0.0
        r = correct / len(true) if true else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": p, "recall": r, "f1": f, "support": len(true)}

    result = scores(true_spans, pred_spans)
    types = sorted({s[1] for s in true_spans})
    result["per_type"] = {t: scores({s for s in true_spans if s[1] == t},
                                    {s for s in pred_spans if s[1] == t}) for t in types}
    return result
