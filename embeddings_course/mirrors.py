"""Which library function mirrors which exercise, and tests of a caller with the
library's known-good version of its callee.

Later notebooks need the earlier exercises' results, so the library keeps its own version
of many of them (`sparse.deduplicate` is notebook 02's `deduplicate`). `MIRRORS` lists
them, the exercise's own form first. While a notebook is graded, its kernel gets a copy of
only the library modules its own cells need, in which no version of that notebook's
exercises is left (autograder.engine.trusted.withheld): `IN_A_GRADED_COPY` says how each
version is rewritten there. `known_good` runs a test of a caller with the library's version
of its callee, so that a mistake in the callee costs only the callee's points.
"""

from __future__ import annotations

import contextlib
import importlib
import types

# exercise grade id -> the library objects that do the same job ("module:attribute");
# read-only, so that nothing changes which library names a graded kernel is denied
MIRRORS: types.MappingProxyType = types.MappingProxyType({
    "rows_changed": ("embeddings_course.checks:rows_changed",),
    "deduplicate": ("sparse_embeddings.sparse:deduplicate",
                    "sparse_embeddings.sparse:sum_duplicates"),
    "sparse_sgd_update": ("sparse_embeddings.sparse:sparse_sgd_update",),
    "lazy_adam_update": ("sparse_embeddings.sparse:lazy_adam_update",
                         "sparse_embeddings.optimizers:LazyAdam"),
    "PartiallyFrozenEmbedding": ("sparse_embeddings.layers:PartiallyFrozenEmbedding",),
    "normalize_token": ("embeddings_course.ner:normalize_token",
                        "embeddings_course.ner:normalize_sentence"),
    "build_vocab": ("embeddings_course.ner:build_vocab",),
    "encode_batch": ("embeddings_course.ner:encode_batch",),
    "masked_cross_entropy": ("embeddings_course.ner:masked_cross_entropy",),
    "build_tagger": ("embeddings_course.ner:build_tagger",
                     "embeddings_course.tagging:make_tagger"),
    "train_step": ("embeddings_course.ner:train_step", "embeddings_course.tagging:fit"),
    "extract_spans": ("embeddings_course.spans:extract_spans",),
    "precision_recall_f1": ("embeddings_course.spans:precision_recall_f1",),
    "shard_of": ("embeddings_course.cluster:shard_of", "embeddings_course.cluster:shard_sizes"),
    "step_traffic_bytes": ("embeddings_course.cluster:predicted_traffic",),
    "sharded_lookup": ("embeddings_course.cluster:sharded_lookup",
                       "embeddings_course.cluster:lookup"),
})

# how the copy of the library a graded kernel gets treats each version of the notebook's
# exercises (autograder.engine.trusted.withheld):
# - "answer": called as the exercise is, so the copy's version calls the student's own
#   answer (the kernel's name of the exercise), and the library's code that needs it, such
#   as LazyAdam on lazy_adam_update, does what the student's function does;
# - "built on": does the exercise's job only by calling its "answer" version, so it stays;
# - a version not listed here is a stub that raises Withheld.
ANSWER, BUILT_ON = "answer", "built on"
IN_A_GRADED_COPY: types.MappingProxyType = types.MappingProxyType({
    "embeddings_course.checks:rows_changed": ANSWER,
    "sparse_embeddings.sparse:deduplicate": ANSWER,
    "sparse_embeddings.sparse:sum_duplicates": ANSWER,  # the student's deduplicate serves
    "sparse_embeddings.sparse:sparse_sgd_update": ANSWER,
    "sparse_embeddings.sparse:lazy_adam_update": ANSWER,
    "sparse_embeddings.optimizers:LazyAdam": BUILT_ON,  # its sparse step: lazy_adam_update
    "embeddings_course.ner:normalize_token": ANSWER,
    "embeddings_course.ner:normalize_sentence": BUILT_ON,  # normalize_token on each token
    "embeddings_course.ner:build_vocab": ANSWER,
    "embeddings_course.ner:encode_batch": ANSWER,
    "embeddings_course.ner:masked_cross_entropy": ANSWER,
    "embeddings_course.ner:build_tagger": ANSWER,
    "embeddings_course.tagging:make_tagger": BUILT_ON,  # its model: build_tagger's
    "embeddings_course.ner:train_step": ANSWER,
    "embeddings_course.tagging:fit": BUILT_ON,  # each step: train_step
    "embeddings_course.spans:extract_spans": ANSWER,
    "embeddings_course.spans:precision_recall_f1": ANSWER,
    "embeddings_course.cluster:shard_of": ANSWER,
    "embeddings_course.cluster:predicted_traffic": ANSWER,
    "embeddings_course.cluster:sharded_lookup": ANSWER,
    "embeddings_course.cluster:lookup": BUILT_ON,  # the rows: sharded_lookup of unique ids
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
    from embeddings_course import observe

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
