"""Which library function mirrors which exercise, and tests of a caller with the
library's known-good version of its callee.

Later notebooks need the earlier exercises' results, so the library keeps its own version
of many of them (`sparse.deduplicate` is notebook 02's `deduplicate`). `MIRRORS` lists
them. While a notebook is graded, its kernel gets a copy of the library without the
versions of that notebook's exercises (autograder.engine.trusted.withheld), so an answer cannot
call
them. `known_good` runs a test of a caller with the library's version of its callee, so
that a mistake in the callee costs only the callee's points.
"""

from __future__ import annotations

import contextlib
import importlib
import types

# exercise grade id -> the library objects that do the same job ("module:attribute");
# read-only, so that nothing changes which library names a graded kernel is denied
MIRRORS: types.MappingProxyType = types.MappingProxyType({
    "rows_changed": ("sparse_embeddings.checks:rows_changed",),
    "deduplicate": ("sparse_embeddings.sparse:deduplicate",),
    "sparse_sgd_update": ("sparse_embeddings.sparse:sparse_sgd_update",),
    "lazy_adam_update": ("sparse_embeddings.sparse:lazy_adam_update",
                         "sparse_embeddings.optimizers:LazyAdam"),
    "PartiallyFrozenEmbedding": ("sparse_embeddings.layers:PartiallyFrozenEmbedding",),
    "normalize_token": ("sparse_embeddings.ner:normalize_token",
                        "sparse_embeddings.ner:normalize_sentence"),
    "build_vocab": ("sparse_embeddings.ner:build_vocab",),
    "encode_batch": ("sparse_embeddings.ner:encode_batch",),
    "masked_cross_entropy": ("sparse_embeddings.ner:masked_cross_entropy",),
    "build_tagger": ("sparse_embeddings.ner:build_tagger",
                     "sparse_embeddings.tagging:make_tagger"),
    "train_step": ("sparse_embeddings.ner:train_step", "sparse_embeddings.tagging:fit"),
    "extract_spans": ("sparse_embeddings.ner:extract_spans",),
    "precision_recall_f1": ("sparse_embeddings.ner:precision_recall_f1",),
    "shard_of": ("sparse_embeddings.cluster:shard_of", "sparse_embeddings.cluster:shard_sizes"),
    "step_traffic_bytes": ("sparse_embeddings.cluster:predicted_traffic",),
    "sharded_lookup": ("sparse_embeddings.cluster:lookup",),
})


def versions(exercise: str) -> list[tuple[str, object]]:
    """(dotted name, object) of each library version of `exercise`."""
    found = []
    for spec in MIRRORS.get(exercise, ()):
        module, _, attribute = spec.partition(":")
        found.append((f"{module}.{attribute}", getattr(importlib.import_module(module),
                                                       attribute)))
    return found


def _unwrap(answer):
    """The function behind a partial, a bound method, a tf.function, a decorator."""
    for _ in range(20):
        inner = (getattr(answer, "func", None) or getattr(answer, "__func__", None)
                 or getattr(answer, "python_function", None)
                 or getattr(answer, "__wrapped__", None))
        if inner is None or inner is answer:
            break
        answer = inner
    return answer


@contextlib.contextmanager
def known_good(caller, *callees: str):
    """Run the block with the library's version of each exercise in `callees` bound, in
    the caller's own namespace, to the name the caller calls: a mistake in the student's
    callee then costs only the callee's points, and the caller's test judges the caller.
    The student's functions are bound again afterwards. While a notebook is graded, the
    caller lives in the kernel: the grader binds the names there
    (autograder.engine.trusted.testcells)."""
    from sparse_embeddings import observe

    router = observe.router()
    if router is not None and observe.is_remote(caller):
        with contextlib.ExitStack() as stack:
            for name in callees:
                stack.enter_context(router.known_good(caller, name, MIRRORS[name][0]))
            yield
        return
    namespace = _unwrap(caller).__globals__
    missing = object()
    saved = {name: namespace.get(name, missing) for name in callees}
    try:
        for name in callees:
            namespace[name] = versions(name)[0][1]
        yield
    finally:
        for name, value in saved.items():
            if value is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = value
