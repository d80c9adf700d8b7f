# Mistake: divides without checking for 0, so tweets without any predicted (or true) span
# raise ZeroDivisionError instead of scoring 0.
def precision_recall_f1(true_tags, pred_tags):
    true_spans = {(k,) + s for k, tags in enumerate(true_tags) for s in extract_spans(tags)}
    pred_spans = {(k,) + s for k, tags in enumerate(pred_tags) for s in extract_spans(tags)}

    def scores(true, pred):
        correct = len(true & pred)
        p = correct / len(pred)
        r = correct / len(true)
        f = 2 * p * r / (p + r)
        return {"precision": p, "recall": r, "f1": f, "support": len(true)}

    result = scores(true_spans, pred_spans)
    types = sorted({s[1] for s in true_spans | pred_spans})
    result["per_type"] = {t: scores({s for s in true_spans if s[1] == t},
                                    {s for s in pred_spans if s[1] == t}) for t in types}
    return result
