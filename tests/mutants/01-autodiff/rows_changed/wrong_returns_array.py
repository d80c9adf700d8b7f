# Mistake: returns NumPy's array of the row ids (right values), where the docstring says a
# list of ints: `rows == []` and `rows + [5]` then do what arrays do, not what lists do.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    differs = (before != after).reshape(len(before), int(np.prod(before.shape[1:])))
    return np.flatnonzero(differs.any(axis=1))
