# Mistake: compares with np.isclose's default tolerance: tiny changes (an Adam step on a row
# that left the batch) go unseen.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    same = np.isclose(before, after).reshape(len(before), -1).all(axis=1)
    return [int(i) for i in np.flatnonzero(~same)]
