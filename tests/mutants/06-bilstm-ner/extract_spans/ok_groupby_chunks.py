# Another correct answer: mark where each span starts, then cut the sequence at O and starts.
def extract_spans(tags):
    spans = []
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        prev = tags[i - 1] if i else "O"
        if tag.startswith("B-") or prev == "O" or prev[2:] != tag[2:]:
            end = i + 1
            while end < len(tags) and tags[end] == "I-" + tag[2:]:
                end += 1
            spans.append((tag[2:], i, end))
    return spans
