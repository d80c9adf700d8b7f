"""The library's versions of exercises (`embeddings_course.mirrors`): each names its
exercise and gives what the notebook's solution gives; the kernel that grades a notebook
gets a library in which each calls the student's own answer or is left out
(autograder.engine.trusted.withheld), whose own code still works;
`known_good` lends a caller the library's callee and gives the student's back."""

import functools
import re

import numpy as np
import pytest
import tensorflow as tf

from autograder.cells import exercises, read_notebook, strip_solution_markers
from conftest import solution_paths
from embeddings_course import checks, cluster, mirrors, ner
from embeddings_course.mirrors import known_good
from sparse_embeddings import layers, sparse


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


# --- the library a graded notebook's kernel gets: its exercises withheld ---------------

WITHHELD_PROBE = """
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
import embeddings_course
import sparse_embeddings
for package in (embeddings_course, sparse_embeddings):
    assert package.__file__.startswith(sys.argv[1]), package.__file__
found = {}
for spec in json.loads(sys.argv[2]):
    module, _, name = spec.partition(":")
    try:
        getattr(importlib.import_module(module), name)()
    except Exception as error:
        found[spec] = type(error).__name__ + ": " + str(error)
    else:
        found[spec] = "ran"
print(json.dumps(found))
"""


def _run_with(library, code: str, *args: str) -> str:
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", code, str(library), *args],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout


@pytest.mark.slow
def test_a_graded_notebooks_library_calls_the_students_answers_and_the_rest_works(tmp_path):
    """While 06 is graded its kernel's library has no build_tagger, train_step, spans or
    scores of its own: each calls the kernel's (the student's) function of that name, and
    says why where there is none; what the notebook's own cells use (tagging.Tagger and
    tagging.fit) works, and fit trains with the student's train_step."""
    import json

    from autograder.engine.trusted import withheld
    from autograder.engine.trusted.executor import facts_of

    release = read_notebook(next(p for p in solution_paths() if p.parent.name[:2] == "06"))
    _, graded, kept = facts_of(release)
    recipe = withheld.withheld_names(graded, kept)
    assert {"build_tagger", "train_step", "extract_spans", "precision_recall_f1"} <= recipe
    assert {"embeddings_course.tagging", "embeddings_course.ner"} <= recipe
    library = withheld.library_copy(recipe, tmp_path, "06-bilstm-ner")
    specs = [f"embeddings_course.{m}:{n}" for m, n in (
        ("ner", "build_tagger"), ("ner", "train_step"), ("ner", "extract_spans"),
        ("spans", "extract_spans"), ("ner", "precision_recall_f1"))]
    found = json.loads(_run_with(library, WITHHELD_PROBE, json.dumps(specs)).splitlines()[-1])
    assert all(v.startswith("Withheld: the course library's") and "calls your own" in v
               for v in found.values()), found
    # fit trains with the kernel's train_step: here one that counts its calls (traces)
    code = ("import sys\nsys.path.insert(0, sys.argv[1])\nimport keras\n"
            "from embeddings_course import tagging\nfrom embeddings_course.spans import TAGS\n"
            "calls = []\n"
            "def train_step(model, optimizer, batch, clip_norm=5.0):\n"
            "    calls.append(1)\n    return 0.5\n"
            "model = keras.Sequential([keras.layers.Embedding(4, 3),"
            " keras.layers.Dense(len(TAGS))])\n"
            "tagger = tagging.Tagger({'<PAD>': 0, '<UNK>': 1, 'a': 2, 'b': 3}, model, False)\n"
            "history = tagging.fit(tagger, [(['a', 'b'], ['O', 'B-person'])] * 4, epochs=1,"
            " batch_size=2, verbose=0)\n"
            "print('steps', len(history['loss']), 'calls', len(calls))")
    assert "steps 2 calls 1" in _run_with(library, code)  # traced once, in fit's tf.function


def test_a_graded_copy_has_each_exercise_with_versions_and_each_module_its_cells_use():
    from autograder.engine.trusted import withheld
    from autograder.engine.trusted.executor import facts_of

    for path in solution_paths():
        _, graded, kept = facts_of(read_notebook(path))
        recipe = withheld.withheld_names(graded, kept)
        assert {e for e in graded if e in mirrors.MIRRORS} <= recipe, path.parent.name
        assert "embeddings_course.runtime" in recipe, path.parent.name
        for exercise in graded:  # each version of it: rewritten by a rule, or a stub
            for spec in mirrors.MIRRORS.get(exercise, ()):
                assert mirrors.IN_A_GRADED_COPY.get(spec, "stub") in (
                    mirrors.ANSWER, mirrors.BUILT_ON, "stub"), spec
        if path.parent.name[:2] == "07":
            assert {"shard_of", "sharded_lookup", "step_traffic_bytes"} <= recipe


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


def test_a_notebook_cannot_change_what_is_withheld():
    with pytest.raises(TypeError):
        mirrors.MIRRORS["deduplicate"] = ("sparse_embeddings.sparse:sum_duplicates",)
    assert mirrors.MIRRORS["deduplicate"] == ("sparse_embeddings.sparse:deduplicate",
                                              "sparse_embeddings.sparse:sum_duplicates")
    with pytest.raises(TypeError):
        mirrors.IN_A_GRADED_COPY["embeddings_course.cluster:lookup"] = mirrors.ANSWER
