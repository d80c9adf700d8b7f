# Mistake: joins all tweets into one tag sequence, so a span at the end of a tweet runs on
# into an I- tag at the start of the next.
def precision_recall_f1(true_tags, pred_tags):
    true_spans = set(extract_spans([t for tags in true_tags for t in tags]))
    pred_spans = set(extract_spans([t for tags in pred_tags for t in tags]))

    def scores(true, pred):
        correct = len(true & pred)
        p = correct / len(pred) if pred else 0.0
        r = correct / len(true) if true else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": p, "recall": r, "f1": f, "support": len(true)}

    result = scores(true_spans, pred_spans)
    types = sorted({s[0] for s in true_spans | pred_spans})
    result["per_type"] = {t: scores({s for s in true_spans if s[0] == t},
                                    {s for s in pred_spans if s[0] == t}) for t in types}
    return result
