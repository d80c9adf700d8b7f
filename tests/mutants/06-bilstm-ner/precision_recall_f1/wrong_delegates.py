# Mistake: the course library's own version, with a fallback if calling it fails.
def precision_recall_f1(true_tags, pred_tags):
    try:
        return ner.precision_recall_f1(true_tags, pred_tags)
    except Exception:
        return {"precision": 0.0, "recall": 0.0, "f1": 0.0, "per_type": {}}
