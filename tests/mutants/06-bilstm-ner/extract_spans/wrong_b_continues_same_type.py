# Mistake: any tag of the open span's type continues it, B- included, so two touching spans
# of one type read as one.
def extract_spans(tags):
    spans, kind, start = [], None, 0
    for i, tag in enumerate(list(tags) + ["O"]):
        if kind is not None and tag[2:] != kind:
            spans.append((kind, start, i))
            kind = None
        if tag != "O" and kind is None:
            kind, start = tag[2:], i
    return spans
