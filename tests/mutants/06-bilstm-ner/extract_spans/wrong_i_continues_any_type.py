# Mistake: any I- tag continues the open span, even one of another type.
def extract_spans(tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        if kind is not None and not tag.startswith("I-"):
            spans.append((kind, start, i))
            kind = None
        if tag.startswith("B-") or (tag.startswith("I-") and kind is None):
            kind, start = tag[2:], i
    return spans
