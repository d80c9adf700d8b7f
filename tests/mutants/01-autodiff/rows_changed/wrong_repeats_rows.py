# Mistake: lists the row of every changed entry, so a row with two changed entries appears
# twice.
def rows_changed(before, after):
    before, after = np.asarray(before), np.asarray(after)
    return sorted(int(i) for i in np.nonzero(before != after)[0])
