# Mistake: end is the index of the span's last token (inclusive), not one past it.
def extract_spans(tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        if kind is not None and tag != "I-" + kind:
            spans.append((kind, start, i - 1))
            kind = None
        if tag.startswith("B-") or (tag.startswith("I-") and kind is None):
            kind, start = tag[2:], i
    return spans
