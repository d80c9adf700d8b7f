"""The library's BiLSTM tagger (`embeddings_course.ner`): the reference answers of notebook 05,
the model, training, scoring against seqeval, saving."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.metrics.sequence_labeling import get_entities

from embeddings_course import checks, ner, tagging
from sparse_embeddings.optimizers import LazyAdam

TRAIN = [
    (["@bob", "loves", "New", "York", "http://x.co"], ["O", "O", "B-geo-loc", "I-geo-loc", "O"]),
    (["Apple", "iPhone", "#paris"], ["B-company", "B-product", "B-geo-loc"]),
    (["zzqx", "loves", "zzqx"], ["B-person", "O", "B-person"]),
]
WORDS = ["loves", "new", "york", "apple", "paris"]


def small_tagger(use_chars=True, seed=0, dropout=0.5):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(WORDS), 6)).astype(np.float32)
    return tagging.make_tagger(TRAIN, WORDS, vectors, use_chars=use_chars, units=8, seed=seed,
                           dropout=dropout)


def test_normalize_token():
    assert [ner.normalize_token(t) for t in
            ["@Bob", "@", "HTTPS://t.co/x", "http://a", "httpx", "New", "#Paris", "a@b"]] == [
        "<USR>", "@", "<URL>", "<URL>", "httpx", "new", "#paris", "a@b"]
    assert ner.glove_form("#paris", {"paris"}) == "paris"
    assert ner.glove_form("#zzz", {"paris"}) == "#zzz"


def test_build_vocab_layout():
    vocab = ner.build_vocab([["new", "qq", "qq", "rr"], ["york", "rr", "ss"]], ["new", "york"],
                            min_count=2)
    assert vocab == {"<PAD>": 0, "<UNK>": 1, "new": 2, "york": 3, "qq": 4, "rr": 5}


def test_encode_batch_pads_with_zero_and_unknowns_with_one():
    vocab = {"<PAD>": 0, "<UNK>": 1, "a": 2, "b": 3}
    ids, tags, lengths = ner.encode_batch([(["a", "z", "b"], ["O", "B-x", "O"]), (["b"], ["B-x"])],
                                          vocab, {"O": 0, "B-x": 1})
    assert ids.tolist() == [[2, 1, 3], [3, 0, 0]] and ids.dtype == np.int32
    assert tags.tolist() == [[0, 1, 0], [1, 0, 0]] and lengths.tolist() == [3, 1]


def test_masked_cross_entropy_matches_a_hand_computation_and_ignores_padding():
    logits = np.log(np.array([[[0.5, 0.5], [0.9, 0.1], [0.2, 0.8]],
                              [[0.25, 0.75], [0.3, 0.7], [0.6, 0.4]]], np.float32))
    tags = np.array([[0, 0, 7], [1, 3, 3]])  # padded positions hold junk tags
    want = (-(np.log(0.5) + np.log(0.9)) / 2 - np.log(0.75)) / 2
    with tf.GradientTape() as tape:
        x = tf.constant(logits)
        tape.watch(x)
        loss = ner.masked_cross_entropy(np.minimum(tags, 1), x, [2, 1])
    checks.check_close(loss, want, atol=1e-6)
    grad = tape.gradient(loss, x).numpy()
    assert not grad[0, 2].any() and not grad[1, 1:].any()


def test_tagger_output_ignores_padding_and_sees_both_directions():
    tagger = small_tagger()
    inputs, _, lengths = tagger.batch(TRAIN)
    out = tagger.model(inputs).numpy()
    assert out.shape == (3, 5, len(ner.TAGS))
    alone = tagger.model(tagger.batch(TRAIN[2:])[0]).numpy()  # no padding
    checks.check_close(out[2, :3], alone[0], atol=1e-5, name="outputs with padding")
    other = [(["zzqx", "loves", "york"], ["O"] * 3)]
    changed = tagger.model(tagger.batch(other)[0]).numpy()
    assert not np.allclose(changed[0, 0], alone[0, 0]), "token 0 sees the last token"


def test_embedding_gradient_stays_sparse_and_only_new_rows_move():
    tagger = small_tagger()
    model = tagger.model
    embedding = model.get_layer("word_embedding")
    frozen = embedding.pretrained.numpy().copy()
    new_before = embedding.new_rows.numpy().copy()
    inputs, tags, lengths = tagger.batch(TRAIN)
    with tf.GradientTape() as tape:
        loss = ner.masked_cross_entropy(tags, model(inputs, training=True), lengths)
    grads = tape.gradient(loss, model.trainable_variables)
    by_name = {v.path: g for v, g in zip(model.trainable_variables, grads, strict=True)}
    grad = by_name[embedding.new_rows.path]
    assert isinstance(grad, tf.IndexedSlices)
    clipped, _ = tf.clip_by_global_norm(grads, 1e-3)
    assert isinstance(clipped[[v.path for v in model.trainable_variables].index(
        embedding.new_rows.path)], tf.IndexedSlices)
    looked_up = np.unique(inputs[0][inputs[0] >= len(frozen)]) - len(frozen)
    ner.train_step(model, LazyAdam(0.01), (inputs, tags, lengths))
    checks.check_unchanged(frozen, embedding.pretrained, name="GloVe rows")
    checks.check_rows_changed(new_before, embedding.new_rows, looked_up, name="new rows")


@pytest.mark.slow  # a training run: 8-15 s on a slow machine
def test_train_step_lowers_the_loss_and_clips():
    tagger = small_tagger(use_chars=False, dropout=0.0)
    batch = tagger.batch(TRAIN)
    optimizer = LazyAdam(0.05)
    losses = [float(ner.train_step(tagger.model, optimizer, batch)) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0], losses

    seen = []

    class Spy(LazyAdam):
        def apply_gradients(self, grads_and_vars):
            grads_and_vars = list(grads_and_vars)
            seen.append([g for g, _ in grads_and_vars])
            return super().apply_gradients(grads_and_vars)

    ner.train_step(tagger.model, Spy(0.01), batch, clip_norm=1e-3)
    kinds = {type(g).__name__ for g in seen[0]}
    assert "IndexedSlices" in kinds, kinds
    norm = tf.linalg.global_norm(seen[0])
    assert float(norm) <= 1e-3 * (1 + 1e-5), float(norm)


def test_decode_bio_is_the_best_sequence_that_obeys_the_bio_rules():
    import itertools

    tags = ("O", "B-a", "I-a", "B-b", "I-b")
    allowed = ner.bio_transitions(tags)
    assert not allowed[-1, 2] and not allowed[0, 2] and not allowed[3, 2] and allowed[1, 2]

    def valid(seq):
        return all(allowed[p, j] for p, j in zip((len(tags),) + seq[:-1], seq, strict=True))

    rng = np.random.default_rng(3)
    for _ in range(100):
        width = int(rng.integers(1, 6))
        logits = 3 * rng.normal(size=(3, width, len(tags)))
        lengths = rng.integers(1, width + 1, size=3)
        got = ner.decode_bio(logits, lengths, allowed)
        for b, n in enumerate(lengths):
            log_p = logits[b, :n] - np.log(np.exp(logits[b, :n]).sum(-1, keepdims=True))
            best = max((s for s in itertools.product(range(len(tags)), repeat=int(n))
                        if valid(s)), key=lambda s: sum(log_p[t, j] for t, j in enumerate(s)))
            assert tuple(got[b, :n]) == best and not got[b, n:].any()
    # an argmax that would open a span with I- gets the B- of the same type instead
    logits = np.log(np.clip([[[0.6, 0.3, 0.1, 0, 0], [0.1, 0, 0.9, 0, 0]]], 1e-13, 1))
    assert ner.decode_bio(logits, [2], allowed).tolist() == [[1, 2]]


@pytest.mark.slow  # a training run: 8-15 s on a slow machine
def test_fit_with_word_dropout_reads_unk_for_training_tokens():
    for rate, moves in ((1.0, False), (0.0, True)):
        tagger = small_tagger()
        new_rows = tagger.model.get_layer("word_embedding").new_rows
        before = new_rows.numpy().copy()
        tagging.fit(tagger, TRAIN, epochs=1, batch_size=3, verbose=0, word_dropout=rate)
        # every real token reads <UNK> (a frozen row) at rate 1: no new row is looked up
        assert (new_rows.numpy() != before).any() == moves, rate
        assert tagger.batch(TRAIN)[0][0].max() >= len(WORDS) + 2  # prediction keeps the rows


def random_tags(rng, n, types=("a", "b", "c")):
    choices = ["O"] + [f"{p}-{t}" for t in types for p in "BI"]
    return [str(x) for x in rng.choice(choices, size=n, p=None)]


def test_extract_spans_equals_seqeval_on_random_sequences():
    rng = np.random.default_rng(0)
    for _ in range(300):
        tags = random_tags(rng, int(rng.integers(0, 12)))
        want = [(t, s, e + 1) for t, s, e in get_entities(tags)]
        assert sorted(ner.extract_spans(tags)) == sorted(want), tags


def test_precision_recall_f1_equals_seqeval():
    rng = np.random.default_rng(1)
    for trial in range(40):
        lengths = rng.integers(1, 10, size=int(rng.integers(1, 8)))
        true = [random_tags(rng, n) for n in lengths]
        pred = [random_tags(rng, n) if rng.random() < 0.7 else list(t)
                for n, t in zip(lengths, true, strict=True)]
        got = ner.precision_recall_f1(true, pred)
        for key, fn in (("precision", precision_score), ("recall", recall_score),
                        ("f1", f1_score)):
            checks.check_close(got[key], fn(true, pred, zero_division=0), atol=1e-12,
                               name=f"{key} of trial {trial}")
        report = classification_report(true, pred, output_dict=True, zero_division=0)
        for kind, scores in got["per_type"].items():
            checks.check_close(scores["f1"], report[kind]["f1-score"], atol=1e-12)
            assert scores["support"] == report[kind]["support"]
    assert ner.precision_recall_f1([["O"]], [["O"]])["f1"] == 0.0
    with pytest.raises(ValueError):
        ner.precision_recall_f1([["O"]], [["O", "O"]])


@pytest.mark.slow  # a training run: 8-15 s on a slow machine
def test_fit_logs_scalars_predicts_and_saves(tmp_path, capsys):
    tagger = small_tagger()
    history = tagging.fit(tagger, TRAIN, TRAIN, epochs=2, batch_size=2, logdir=tmp_path / "tb",
                      restore_best=True)
    assert len(history["loss"]) == 4 and len(history["val_f1"]) == 2
    assert "Epoch 2/2" in capsys.readouterr().out  # the progress bar goes to stdout
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert {"loss", "val_f1"} <= set(events.Tags()["tensors"])
    predicted = tagger.predict(TRAIN)
    assert [len(p) for p in predicted] == [5, 3, 3]
    assert set(ner.report_table(tagger.evaluate(TRAIN)).split()) >= {"micro", "F1"}
    tagging.save_tagger(tagger, tmp_path / "m.keras")
    loaded = tagging.load_tagger(tmp_path / "m.keras", WORDS)
    assert loaded.vocab == tagger.vocab
    assert loaded.predict(TRAIN) == predicted
    with pytest.raises(ValueError, match="GloVe words"):
        tagging.load_tagger(tmp_path / "m.keras", WORDS[:2])


def test_errors_shows_tokens_with_true_and_predicted_tags():
    shown = tagging.errors(TRAIN[:1], [["O"] * 5])
    assert shown == ["@bob loves New[B-geo-loc|O] York[I-geo-loc|O] http://x.co"]


def test_check_equal_names_the_first_difference():
    checks.check_equal({"a": 1}, {"a": 1})
    checks.check_equal([("x", 0, 1)], [("x", 0, 1)])
    with pytest.raises(checks.CheckFailed,
                       match=r"^spans\[1\]: got \('y', 2, 3\), expected \('y', 2, 4\)"):
        checks.check_equal([("x", 0, 1), ("y", 2, 3)], [("x", 0, 1), ("y", 2, 4)], name="spans")
    with pytest.raises(checks.CheckFailed, match="^result: got 1 items, expected 2"):
        checks.check_equal([1], [1, 2])
    with pytest.raises(checks.CheckFailed, match=r"Keys missing: \[b\]; unexpected keys: \[c\]"):
        checks.check_equal({"a": 1, "c": 3}, {"a": 1, "b": 2})
    with pytest.raises(checks.CheckFailed, match="Hint: lowercase"):
        checks.check_equal("Paris", "paris", hint="lowercase")
