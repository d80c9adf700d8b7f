# Mistake: the answer hands the work to the course library's own version, via its module.
from embeddings_course import checks as _checks


def rows_changed(before, after):
    return _checks.rows_changed(before, after)
