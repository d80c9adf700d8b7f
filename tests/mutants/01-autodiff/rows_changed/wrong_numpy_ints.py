# Mistake: a list, but of NumPy integers (list(np.flatnonzero(...))), not Python ints.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    differs = (before != after).reshape(len(before), int(np.prod(before.shape[1:])))
    return list(np.flatnonzero(differs.any(axis=1)))
