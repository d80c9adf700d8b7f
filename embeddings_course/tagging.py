"""The trained tagger of notebook 06: a vocabulary and a model made for the training
tweets (`make_tagger`), trained with `LazyAdam` and the notebook's `train_step` (`fit`),
tags predicted for raw tweets (`Tagger.predict`, BIO decoding by default), its errors
shown, and the whole saved to a `.keras` file and loaded back.

The pieces it puts together, the notebooks' exercises among them, are `embeddings_course.ner`
(inputs, model, loss, step) and `embeddings_course.spans` (tags, spans, scores).

    >>> tagger = make_tagger(split["train"], *data.load_glove())
    >>> history = fit(tagger, split["train"], split["validation"], epochs=12)
    >>> tagger.evaluate(split["test"])["f1"]
"""

from __future__ import annotations

import math
import time

import keras
import numpy as np
import tensorflow as tf

from embeddings_course.ner import (
    CHARS,
    UNK,
    build_tagger,
    build_vocab,
    encode_batch,
    encode_chars,
    normalized,
    pretrained_matrix,
    train_step,
)
from embeddings_course.progress import Progress
from embeddings_course.spans import TAG_INDEX, TAGS, decode_bio, extract_spans, precision_recall_f1
from sparse_embeddings.optimizers import LazyAdam


class Tagger:
    """A vocabulary, a model and how to feed it: what the notebook and benchmark share.

    decode: how `predict` turns logits into tags: "bio" (default), the most probable tag
    sequence in which no `I-x` follows `O` or another type (`decode_bio`); "argmax", the
    most probable tag of each token on its own.
    """

    def __init__(self, vocab: dict[str, int], model: keras.Model, use_chars: bool,
                 num_glove: int = 0, decode: str = "bio"):
        if decode not in ("argmax", "bio"):
            raise ValueError(f"decode is 'argmax' or 'bio'; got {decode!r}")
        self.vocab = vocab
        self.model = model
        self.use_chars = use_chars
        self.num_glove = num_glove
        self.decode = decode
        # GloVe words are ids 2 .. num_glove + 1 of the vocabulary
        self.known = {w for w, i in vocab.items() if 2 <= i < num_glove + 2} or None

    def batch(self, sentences):
        """`(inputs, tags, lengths)` of raw `(tokens, tags)` sentences, as `train_step` takes."""
        ids, tags, lengths = encode_batch(normalized(sentences, self.known), self.vocab,
                                          TAG_INDEX)
        if self.use_chars:
            return [ids, encode_chars(sentences, ids.shape[1])], tags, lengths
        return ids, tags, lengths

    def predict(self, sentences, batch_size: int = 256, decode: str | None = None
                ) -> list[list[str]]:
        """Predicted BIO tags of raw sentences (the tags given are ignored).

        decode: "argmax" (the most probable tag of each token) or "bio" (the most probable
        sequence that obeys the BIO rules, `decode_bio`); default the tagger's own.
        """
        decode = decode or self.decode
        out = []
        for start in range(0, len(sentences), batch_size):
            chunk = [(t, ["O"] * len(t)) for t, *_ in sentences[start:start + batch_size]]
            inputs, _, lengths = self.batch(chunk)
            logits = np.asarray(self.model(inputs, training=False))
            best = (decode_bio(logits, lengths) if decode == "bio"
                    else np.argmax(logits, axis=-1))
            out += [[TAGS[i] for i in row[:n]] for row, n in zip(best, lengths, strict=True)]
        return out

    def evaluate(self, sentences, decode: str | None = None) -> dict:
        return precision_recall_f1([list(tags) for _, tags in sentences],
                                   self.predict(sentences, decode=decode))


def make_tagger(train, glove_words=None, glove_vectors=None, use_glove: bool = True,
                use_chars: bool = True, units: int = 64, dropout: float = 0.3,
                min_count: int = 2, seed: int = 0, decode: str = "bio") -> Tagger:
    """A vocabulary and an untrained model for the raw `train` sentences.

    With `use_glove=False` (the baseline), no pretrained rows: every training token
    gets a trainable random row (`PartiallyFrozenEmbedding` with only padding and
    `<UNK>` frozen).
    """
    keras.utils.set_random_seed(seed)
    words = list(glove_words) if use_glove else []
    known = set(words) or None
    token_lists = [tokens for tokens, _ in normalized(train, known)]
    vocab = build_vocab(token_lists, words, min_count=min_count)
    dim = 50 if glove_vectors is None else np.shape(glove_vectors)[1]
    vectors = glove_vectors if use_glove else np.zeros((0, dim), np.float32)
    pretrained = pretrained_matrix(vectors)
    model = build_tagger(pretrained, len(vocab) - len(pretrained), len(TAGS), units=units,
                         num_chars=len(CHARS) + 2 if use_chars else 0, dropout=dropout)
    return Tagger(vocab, model, use_chars, num_glove=len(words), decode=decode)


def batches(sentences, batch_size: int, rng: np.random.Generator | None = None):
    """Lists of `batch_size` sentences, shuffled by `rng` when given."""
    order = np.arange(len(sentences)) if rng is None else rng.permutation(len(sentences))
    for start in range(0, len(order), batch_size):
        yield [sentences[i] for i in order[start:start + batch_size]]


def fit(tagger: Tagger, train, validation=None, epochs: int = 10, batch_size: int = 32,
        lr: float = 3e-3, clip_norm: float = 5.0, seed: int = 0, logdir=None,
        verbose: int = 1, step_fn=None, restore_best: bool = False,
        word_dropout: float = 0.0) -> dict:
    """Train with LazyAdam, one `train_step` per batch; returns the history.

    history: "loss" (one per step), "epoch_loss", "val_f1" (one per epoch, when
    `validation` is given), "seconds". With `verbose`, a progress line per epoch
    (`progress.Progress`: updated in place in a notebook; never on stderr). With `logdir`,
    TensorBoard scalars `loss` (per step) and `val_f1` (per epoch). With
    `restore_best` (and `validation`), the weights of the epoch with the best
    validation F1 are put back at the end (early stopping on validation, never test).
    With `word_dropout`, each real token of a training batch reads `<UNK>` with that
    probability (its characters stay): the model learns to tag words it has no row for,
    as it must for new words at test time.
    """
    optimizer = LazyAdam(lr)
    model, step_fn = tagger.model, step_fn or train_step

    # one tf.function per run, closing over model and optimizer, traced once: any batch
    # size and tweet length
    matrix = tf.TensorSpec((None, None), tf.int32)
    input_spec = ([matrix, tf.TensorSpec((None, None, None), tf.int32)] if tagger.use_chars
                  else matrix)

    @tf.function(input_signature=[input_spec, matrix, tf.TensorSpec((None,), tf.int32)])
    def step(inputs, tags, lengths):
        return step_fn(model, optimizer, (inputs, tags, lengths), clip_norm=clip_norm)

    rng = np.random.default_rng(seed)
    dropout_rng = np.random.default_rng([seed, 1])  # the batch order stays that of rng
    unk = tagger.vocab[UNK]
    writer = tf.summary.create_file_writer(str(logdir)) if logdir is not None else None
    history = {"loss": [], "epoch_loss": [], "val_f1": [], "seconds": 0.0, "best_epoch": None}
    best_f1, best_weights = -1.0, None
    start = time.perf_counter()
    steps_per_epoch = math.ceil(len(train) / batch_size)
    for epoch in range(epochs):
        bar = Progress(steps_per_epoch, f"Epoch {epoch + 1}/{epochs}") if verbose else None
        losses = []
        for k, chunk in enumerate(batches(train, batch_size, rng)):
            inputs, tags, lengths = tagger.batch(chunk)
            if word_dropout:
                ids = inputs[0] if isinstance(inputs, list) else inputs
                ids[(ids > 0) & (dropout_rng.random(ids.shape) < word_dropout)] = unk
            inputs = ([tf.constant(x) for x in inputs] if isinstance(inputs, list)
                      else tf.constant(inputs))
            loss = float(step(inputs, tf.constant(tags), tf.constant(lengths)))
            losses.append(loss)
            history["loss"].append(loss)
            if writer is not None:
                with writer.as_default():
                    tf.summary.scalar("loss", loss, step=epoch * steps_per_epoch + k)
            if bar is not None and k + 1 < steps_per_epoch:
                bar.update(k + 1, loss=loss)
        history["epoch_loss"].append(float(np.mean(losses)))
        values = {"loss": losses[-1]}
        if validation is not None:
            f1 = tagger.evaluate(validation)["f1"]
            history["val_f1"].append(f1)
            values["val_f1"] = f1
            if restore_best and f1 > best_f1:
                best_f1, best_weights = f1, tagger.model.get_weights()
                history["best_epoch"] = epoch + 1
            if writer is not None:
                with writer.as_default():
                    tf.summary.scalar("val_f1", f1, step=epoch + 1)
        if bar is not None:
            bar.update(steps_per_epoch, **values)
    if writer is not None:
        writer.flush()
    if best_weights is not None:
        tagger.model.set_weights(best_weights)
    history["seconds"] = time.perf_counter() - start
    return history


def errors(sentences, predicted, limit: int = 5) -> list[str]:
    """Up to `limit` sentences whose predicted spans differ, shown token / true / predicted."""
    shown = []
    for (tokens, tags), pred in zip(sentences, predicted, strict=True):
        if set(extract_spans(tags)) == set(extract_spans(pred)):
            continue
        marks = []
        for token, t, p in zip(tokens, tags, pred, strict=True):
            marks.append(token if t == p == "O" else f"{token}[{t}|{p}]" if t != p
                         else f"{token}[{t}]")
        shown.append(" ".join(marks))
        if len(shown) == limit:
            break
    return shown


def save_tagger(tagger: Tagger, path) -> None:
    """Save the model to `path` (a `.keras` file) and its new tokens beside it (`.json`).

    The GloVe part of the vocabulary is not repeated: `load_tagger` rebuilds it from
    the GloVe words, and checks that their number matches.
    """
    import json
    from pathlib import Path

    path = Path(path)
    if path.suffix != ".keras":
        raise ValueError(f"save the tagger to a .keras file; got {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tagger.model.save(path)
    new_tokens = [w for w, i in sorted(tagger.vocab.items(), key=lambda kv: kv[1])
                  if i >= tagger.num_glove + 2]
    path.with_suffix(".json").write_text(json.dumps(
        {"num_glove": tagger.num_glove, "use_chars": tagger.use_chars,
         "decode": tagger.decode, "new_tokens": new_tokens, "tags": list(TAGS)},
        ensure_ascii=False))


def load_tagger(path, glove_words=()) -> Tagger:
    """The tagger saved by `save_tagger`; `glove_words` are the GloVe words it was built with."""
    import json
    from pathlib import Path

    path = Path(path)
    meta = json.loads(path.with_suffix(".json").read_text())
    words = list(glove_words)[: meta["num_glove"]]
    if len(words) != meta["num_glove"] or meta["tags"] != list(TAGS):
        raise ValueError(
            f"{path} was saved with {meta['num_glove']} GloVe words and tags {meta['tags']}; "
            f"got {len(words)} words and tags {list(TAGS)}."
        )
    vocab = build_vocab([meta["new_tokens"]], words)
    model = keras.models.load_model(path)
    return Tagger(vocab, model, meta["use_chars"], num_glove=meta["num_glove"],
                  decode=meta.get("decode", "argmax"))
