# Mistake: a lambda around the course library's own version.
extract_spans = lambda tags: ner.extract_spans(tags)  # noqa: E731
