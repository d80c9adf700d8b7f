# Mistake: skips training and returns the least-squares answer in variables, so the
# result does not depend on lr or num_steps.
def fit_linear_regression(X, y, lr, num_steps):
    X = np.asarray(X, np.float64)
    design = np.hstack([X, np.ones((len(X), 1))])
    solution = np.linalg.lstsq(design, np.asarray(y, np.float64), rcond=None)[0]
    return tf.Variable(solution[:-1].astype(np.float32)), tf.Variable(np.float32(solution[-1]))
