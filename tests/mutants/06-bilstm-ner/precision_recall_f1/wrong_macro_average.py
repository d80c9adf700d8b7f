# Mistake: the overall scores are the mean of the per-type scores (macro), not counts over
# all spans (micro).
def precision_recall_f1(true_tags, pred_tags):
    true_spans = {(k,) + s for k, tags in enumerate(true_tags) for s in extract_spans(tags)}
    pred_spans = {(k,) + s for k, tags in enumerate(pred_tags) for s in extract_spans(tags)}

    def scores(true, pred):
        correct = len(true & pred)
        p = correct / len(pred) if pred else 0.0
        r = correct / len(true) if true else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": p, "recall": r, "f1": f, "support": len(true)}

    types = sorted({s[1] for s in true_spans | pred_spans})
    per_type = {t: scores({s for s in true_spans if s[1] == t},
                          {s for s in pred_spans if s[1] == t}) for t in types}
    result = {key: float(np.mean([v[key] for v in per_type.values()])) if types else 0.0
              for key in ("precision", "recall", "f1")}
    result["support"] = len(true_spans)
    result["per_type"] = per_type
    return result
