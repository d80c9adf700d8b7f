# Mistake: a span is recorded only when a later tag closes it, so a span still open at the
# end of the tags is lost.
def extract_spans(tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(tags):
        if kind is not None and tag != "I-" + kind:
            spans.append((kind, start, i))
            kind = None
        if tag.startswith("B-") or (tag.startswith("I-") and kind is None):
            kind, start = tag[2:], i
    return spans
