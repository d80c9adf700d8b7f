"""The library's versions of exercises (`sparse_embeddings.mirrors`): each names its
exercise and gives what the notebook's solution gives; an answer that reaches one, by
any route, fails `own_work`; a test that computes its reference with one does not;
`known_good` lends a caller the library's callee and gives the student's back."""

import functools
import re
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from autograder.notebooks import exercises, read_notebook, strip_solution_markers
from conftest import solution_paths
from sparse_embeddings import checks, cluster, layers, mirrors, ner, sparse
from sparse_embeddings.mirrors import Delegated, known_good, own_work


@functools.cache
def solution_namespace(assignment_prefix: str) -> dict:
    """The solution notebook's setup imports and every answer cell, run in one namespace."""
    path = next(p for p in solution_paths() if p.parent.name.startswith(assignment_prefix))
    nb = read_notebook(path)
    namespace: dict = {}
    setup = next(c for c in nb.cells if c.cell_type == "code")
    exec(setup.source, namespace)  # noqa: S102 - the course's own notebook
    for info in exercises(nb).values():
        exec(strip_solution_markers(info.answer_source), namespace)  # noqa: S102
    return namespace


def test_every_mirror_resolves_and_names_its_exercise():
    owners = {}
    for path in solution_paths():
        for name in exercises(read_notebook(path)):
            owners[name] = path.parent.name[:2]
    for exercise in mirrors.MIRRORS:
        assert exercise in owners, f"{exercise} is no exercise of any notebook"
        found = mirrors.versions(exercise)
        assert found and all(obj is not None for _, obj in found)
        doc = found[0][1].__doc__ or ""
        assert re.search(rf"notebook {owners[exercise]}'s (exercise )?`{exercise}`", doc), \
            found[0][0]


def _slices(rng, n=9, k=14, dtype=tf.int32):
    return tf.IndexedSlices(tf.constant(rng.normal(size=(k, 3)), tf.float32),
                            tf.constant(rng.integers(0, n, size=k), dtype), tf.constant([n, 3]))


def test_notebook_02_and_03_solutions_equal_the_library():
    rng = np.random.default_rng(0)
    ns = {**solution_namespace("02"), **{k: v for k, v in solution_namespace("03").items()
                                         if k != "deduplicate"}}
    for dtype in (tf.int32, tf.int64):
        g = _slices(rng, dtype=dtype)
        got, want = ns["deduplicate"](g), sparse.deduplicate(g)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_allclose(got.values, want.values, atol=1e-6)
    start = rng.normal(size=(9, 3)).astype(np.float32)
    mine, theirs = tf.Variable(start), tf.Variable(start)
    g = _slices(rng)
    ns["sparse_sgd_update"](mine, g, 0.3)
    sparse.sparse_sgd_update(theirs, g, 0.3)
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), atol=1e-6)
    state = [[tf.Variable(start), tf.Variable(tf.zeros_like(start)),
              tf.Variable(tf.zeros_like(start))] for _ in range(2)]
    for step in (1, 2, 3):
        g = _slices(rng, k=5)
        ns["lazy_adam_update"](*state[0], g, step, 0.01)
        sparse.lazy_adam_update(*state[1], g, step, 0.01)
    for a, b in zip(*state, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-6)
    pretrained = rng.normal(size=(5, 3)).astype(np.float32)
    mine = ns["PartiallyFrozenEmbedding"](pretrained, num_new_rows=2)
    theirs = layers.PartiallyFrozenEmbedding(pretrained, num_new_rows=2)
    ids = tf.constant([[0, 6, 2], [5, 4, 1]])
    mine(ids), theirs(ids)
    theirs.new_rows.assign(mine.new_rows)
    np.testing.assert_allclose(mine(ids).numpy(), theirs(ids).numpy(), atol=1e-6)


def test_notebook_01_solution_equals_the_library():
    rng = np.random.default_rng(2)
    mine = solution_namespace("01")["rows_changed"]
    for shape in [(12, 3), (9, 2, 2), (7,), (0, 4)]:
        before = rng.normal(size=shape).astype(np.float32)
        after = before.copy()
        if before.size:
            after.reshape(-1)[rng.choice(before.size, size=3)] += 1e-6
        for a, b in [(before, after), (tf.constant(before), tf.constant(after)),
                     (before, before)]:
            assert mine(a, b) == checks.rows_changed(a, b)


def _tag_sequences(rng, count=30, length=None):
    choices = ["O", "O", "O"] + [f"{p}-{t}" for p in "BI" for t in ("person", "geo-loc", "x")]
    return [[str(t) for t in rng.choice(choices, size=length or int(rng.integers(1, 9)))]
            for _ in range(count)]


def test_notebook_05_and_06_solutions_equal_the_library():
    rng = np.random.default_rng(1)
    # 06 imports 05's exercises from the library: 05's own solutions are put over them
    ns = {**solution_namespace("06"), **solution_namespace("05")}
    tokens = ["@paul", "https://t.co/x", "Empire", "@", "lol", "HTTP://A", "name@mail.com"]
    assert [ns["normalize_token"](t) for t in tokens] == [ner.normalize_token(t) for t in tokens]
    sentences = [["the", "<USR>", "lol"], ["lol", "cat", "zzz"], ["zzz", "new"]]
    for min_count in (1, 2):
        assert ns["build_vocab"](sentences, ["the", "cat"], min_count) == \
            ner.build_vocab(sentences, ["the", "cat"], min_count)
    vocab = ner.build_vocab(sentences, ["the", "cat"])
    tags = {t: i for i, t in enumerate(ner.TAGS)}
    batch = [(["the", "zebra", "cat"], ["O", "B-person", "O"]), (["lol"], ["B-company"])]
    for got, want in zip(ns["encode_batch"](batch, vocab, tags),
                         ner.encode_batch(batch, vocab, tags), strict=True):
        np.testing.assert_array_equal(got, want)
    logits = tf.constant(rng.normal(size=(3, 5, 4)), tf.float32)
    tag_ids = tf.constant(rng.integers(0, 4, size=(3, 5)))
    lengths = tf.constant([5, 2, 1])
    np.testing.assert_allclose(ns["masked_cross_entropy"](tag_ids, logits, lengths),
                               ner.masked_cross_entropy(tag_ids, logits, lengths), atol=1e-6)
    true = _tag_sequences(rng)
    pred = [list(t) if rng.random() < 0.3 else _tag_sequences(rng, 1, len(t))[0] for t in true]
    for sequence in true:
        assert ns["extract_spans"](sequence) == ner.extract_spans(sequence)
    got, want = ns["precision_recall_f1"](true, pred), ner.precision_recall_f1(true, pred)
    for key in ("precision", "recall", "f1"):
        assert got[key] == pytest.approx(want[key])
    # the tagger: the same weights, the same logits at inference
    pretrained = rng.normal(size=(6, 4)).astype(np.float32)
    mine = ns["build_tagger"](pretrained, 3, 5, units=4)
    theirs = ner.build_tagger(pretrained, 3, 5, units=4)
    ids = tf.constant([[2, 7, 3, 0], [8, 1, 0, 0]])
    assert [w.shape for w in mine.weights] == [w.shape for w in theirs.weights]
    theirs.set_weights(mine.get_weights())
    np.testing.assert_allclose(mine(ids).numpy(), theirs(ids).numpy(), atol=1e-5)
    batch = (ids, tf.constant([[0, 1, 2, 0], [3, 4, 0, 0]]), tf.constant([3, 2]))
    from sparse_embeddings.optimizers import LazyAdam

    # train_step on two copies of one model without dropout (its masks are random)
    mine = ner.build_tagger(pretrained, 3, 5, units=4, dropout=0.0)
    theirs = ner.build_tagger(pretrained, 3, 5, units=4, dropout=0.0)
    theirs.set_weights(mine.get_weights())

    loss_mine = ns["train_step"](mine, LazyAdam(0.01), batch)
    loss_theirs = ner.train_step(theirs, LazyAdam(0.01), batch)
    np.testing.assert_allclose(float(loss_mine), float(loss_theirs), atol=1e-5)
    for a, b in zip(mine.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_notebook_07_solutions_equal_the_library():
    rng = np.random.default_rng(2)
    ns = solution_namespace("07")
    for _ in range(20):
        num_rows, shards = int(rng.integers(1, 300)), int(rng.integers(1, 9))
        ids = rng.integers(0, num_rows, size=25)
        np.testing.assert_array_equal(ns["shard_of"](ids, num_rows, shards),
                                      cluster.shard_of(ids, num_rows, shards))
        for sparse_ in (True, False):
            assert ns["step_traffic_bytes"](ids, num_rows, 8, sparse=sparse_) == \
                cluster.predicted_traffic(ids, num_rows, 8, sparse=sparse_)

    class Table:  # what cluster.lookup reads of a ShardedVariable
        variables = [tf.Variable(rng.normal(size=(n, 3)).astype(np.float32)) for n in (4, 3, 3)]

    ids = tf.constant(rng.integers(0, 10, 25))
    np.testing.assert_array_equal(ns["sharded_lookup"](Table.variables, ids),
                                  cluster.lookup(Table, ids)[0])


# --- own_work: every route to the library is caught, references in the test are not ---

G = tf.IndexedSlices(tf.ones((3, 2)), tf.constant([2, 0, 2]), tf.constant([4, 2]))


def _caught(exercise, answer, block) -> str:
    with pytest.raises(Delegated) as raised:
        with own_work(exercise, answer):
            block()
    assert exercise in str(raised.value)
    return str(raised.value)


def _helper(s):
    return sparse.deduplicate(s)


_BUILT = types.FunctionType(sparse.deduplicate.__code__, sparse.deduplicate.__globals__)


def _routes():
    from sparse_embeddings.sparse import deduplicate as alias

    def by_alias(s):
        return alias(s)

    def by_import_inside(s):
        import importlib

        return getattr(importlib.import_module("sparse_embeddings." + "sparse"),
                       "dedup" + "licate")(s)

    @tf.function
    def in_tf_function(s):
        return sparse.deduplicate(s)

    def by_helper(s):
        return _helper(s)

    def by_built_copy(s):
        return _BUILT(s)

    def swallowing(s):
        try:
            return sparse.deduplicate(s)
        except Exception:
            return s

    return [by_alias, by_import_inside, in_tf_function, by_helper, by_built_copy, swallowing,
            functools.partial(sparse.deduplicate), sparse.deduplicate,
            lambda s: sparse.deduplicate(s)]


@pytest.mark.parametrize("answer", _routes(), ids=lambda f: getattr(f, "__name__", "partial"))
def test_own_work_catches_every_route_to_the_library(answer):
    message = _caught("deduplicate", answer, lambda: answer(G))
    assert "sparse_embeddings.sparse.deduplicate" in message
    # and the library works as before once the block is left
    np.testing.assert_array_equal(sparse.deduplicate(G).indices, [0, 2])


def test_own_work_passes_an_answer_of_its_own_and_the_tests_reference():
    def deduplicate(s):
        unique, positions = tf.unique(s.indices)
        order = tf.argsort(unique)
        summed = tf.math.unsorted_segment_sum(s.values, positions, tf.size(unique))
        return tf.IndexedSlices(tf.gather(summed, order), tf.gather(unique, order),
                                s.dense_shape)

    with own_work("deduplicate", deduplicate):
        got = deduplicate(G)
        want = sparse.deduplicate(G)  # the test's own reference: allowed
    np.testing.assert_array_equal(got.indices, want.indices)
    assert not tf.config.functions_run_eagerly()


def test_own_work_keeps_the_answers_own_mistake_as_the_message():
    def deduplicate(s):
        raise ValueError("my own bug")

    with pytest.raises(ValueError, match="my own bug"):
        with own_work("deduplicate", deduplicate):
            deduplicate(G)


def test_own_work_catches_a_layer_that_subclasses_or_wraps_the_library():
    class Subclass(layers.PartiallyFrozenEmbedding):
        pass

    _caught("PartiallyFrozenEmbedding", Subclass, lambda: Subclass(np.zeros((3, 2)), 2))

    class Wrapper(keras.layers.Layer):
        def __init__(self, pretrained, num_new_rows, **kwargs):
            super().__init__(**kwargs)
            self.inner = layers.PartiallyFrozenEmbedding(pretrained, num_new_rows)

        def call(self, ids):
            return self.inner(ids)

    _caught("PartiallyFrozenEmbedding", Wrapper,
            lambda: Wrapper(np.zeros((3, 2), np.float32), 2)(tf.constant([[0, 4]])))
    # the library's layer is whole again (Keras reads its __init__'s signature)
    assert layers.PartiallyFrozenEmbedding(np.zeros((3, 2)), 2)(tf.constant([[0, 4]])).shape \
        == (1, 2, 2)


def test_own_work_refuses_an_exercise_without_a_library_version():
    with pytest.raises(ValueError, match="MIRRORS"):
        with own_work("clip_rows", lambda s: s):
            pass


def test_known_good_lends_the_library_callee_and_gives_the_students_back():
    namespace = {"tf": tf}
    exec("def extract_spans(tags):\n    return []\n"  # noqa: S102 - a wrong callee
         "def count(tags):\n    return len(extract_spans(tags))\n", namespace)
    count, wrong = namespace["count"], namespace["extract_spans"]
    tags = ["B-person", "I-person", "O", "B-x"]
    assert count(tags) == 0
    with known_good(count, "extract_spans"):
        assert count(tags) == 2
    assert count(tags) == 0 and namespace["extract_spans"] is wrong
    del namespace["extract_spans"]
    with known_good(count, "extract_spans"):
        assert count(tags) == 2
    assert "extract_spans" not in namespace


def test_own_work_writes_nothing_to_stderr_around_tf_data(capfd):
    """nbgrader fails a test cell that writes to stderr; eager mode makes tf.data warn."""
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    capfd.readouterr()
    with own_work("PartiallyFrozenEmbedding", keras.layers.Dense):
        model.fit(np.zeros((4, 2)), np.zeros((4, 1)), epochs=1, verbose=0)
    assert capfd.readouterr().err == ""


def test_a_notebook_cannot_point_the_tripwires_elsewhere():
    with pytest.raises(TypeError):
        mirrors.MIRRORS["deduplicate"] = ("sparse_embeddings.sparse:sum_duplicates",)
    assert mirrors.MIRRORS["deduplicate"] == ("sparse_embeddings.sparse:deduplicate",)


def test_a_tripwire_keeps_any_signature():
    def odd(a, b=2, /, c=3, *rest, d, e=5, **more):
        return a + b + c + d + e + sum(rest) + sum(more.values())

    code = mirrors._tripwire_code(lambda *args, **kwargs: (args, kwargs), odd)
    copy = types.FunctionType(code, {}, "odd", odd.__defaults__)
    copy.__kwdefaults__ = odd.__kwdefaults__
    import inspect

    assert inspect.signature(copy) == inspect.signature(odd).replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty)
                    for p in inspect.signature(odd).parameters.values()])
    assert copy(1, d=4) == ((1, 2, 3), {"d": 4, "e": 5})
