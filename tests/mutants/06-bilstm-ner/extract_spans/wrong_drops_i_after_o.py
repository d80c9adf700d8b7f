# Mistake: an I- tag that follows O (or another type) is dropped instead of opening a span.
def extract_spans(tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        if kind is not None and tag != "I-" + kind:
            spans.append((kind, start, i))
            kind = None
        if tag.startswith("B-"):
            kind, start = tag[2:], i
    return spans
