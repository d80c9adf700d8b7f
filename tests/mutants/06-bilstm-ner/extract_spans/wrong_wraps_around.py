# Mistake: reads the tag before position i as tags[i - 1], which at i = 0 is the last tag:
# an I- tag that opens the tags is dropped when the last tag has its type.
# Only hidden tests catch it: an I- tag first in the tags, with a tag of its type last
def extract_spans(tags):
    spans = []
    for i, tag in enumerate(tags):
        prev = tags[i - 1]
        if tag.startswith("B-") or (tag.startswith("I-") and prev[2:] != tag[2:]):
            end = i + 1
            while end < len(tags) and tags[end] == "I-" + tag[2:]:
                end += 1
            spans.append((tag[2:], i, end))
    return spans
