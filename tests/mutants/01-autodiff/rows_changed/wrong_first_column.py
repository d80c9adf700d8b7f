# Mistake: looks at the first column only.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    first = before.reshape(len(before), -1)[:, 0] != after.reshape(len(after), -1)[:, 0]
    return [int(i) for i in np.flatnonzero(first)]
