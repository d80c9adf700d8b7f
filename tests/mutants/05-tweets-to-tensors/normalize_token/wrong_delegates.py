# Mistake: the course library's own version behind functools.partial.
import functools

normalize_token = functools.partial(ner.normalize_token)
