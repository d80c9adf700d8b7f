# Mistake: reshape(len(before), -1) cannot infer -1 for a table of no rows.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    differs = (before != after).reshape(len(before), -1).any(axis=1)
    return [int(i) for i in np.flatnonzero(differs)]
