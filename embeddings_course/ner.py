"""A BiLSTM named-entity tagger for tweets: the library version of notebooks 05 and 06.

The notebooks' exercises (`normalize_token`, `build_vocab`, `encode_batch`,
`masked_cross_entropy`, `build_tagger`, `train_step`, `extract_spans`,
`precision_recall_f1`) are here as the course's reference, shared by
`benchmarks/bench_ner.py`, with the inputs they need (the pretrained matrix, character ids,
normalized sentences). The tag set, spans, scores and BIO decoding live in
`embeddings_course.spans` (no TensorFlow there), re-exported here; the trained tagger
(`Tagger`, `make_tagger`, `fit`, saving and loading) is `embeddings_course.tagging`.

    >>> words, vectors = data.load_glove()
    >>> vocab = build_vocab([normalize_sentence(t) for t, _ in train], words)
    >>> model = build_tagger(pretrained_matrix(vectors), len(vocab) - len(words) - 2,
    ...                      len(TAGS), num_chars=len(CHARS) + 2)

The model: `PartiallyFrozenEmbedding` (the GloVe rows frozen, the training set's
new tokens trainable), optionally concatenated with a character CNN per token,
into a bidirectional LSTM and a dense layer giving one logit per tag. Id 0 is
padding everywhere: it is masked, so padding never changes a real token's output.
Prediction (`tagging.Tagger.predict`) takes the most probable tag sequence that obeys the BIO rules
(`decode_bio`, a Viterbi search without learned transitions: no CRF to train).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import keras
import numpy as np
import tensorflow as tf

from embeddings_course.spans import (  # noqa: F401 - ner.X keeps naming them all
    ENTITY_TYPES,
    TAG_INDEX,
    TAGS,
    bio_transitions,
    decode_bio,
    extract_spans,
    precision_recall_f1,
    report_table,
)
from sparse_embeddings.layers import PartiallyFrozenEmbedding

PAD, UNK, USR, URL = "<PAD>", "<UNK>", "<USR>", "<URL>"
# Characters with their own id (ids 2..): printable ASCII; 0 pads, 1 is any other.
CHARS = "".join(chr(c) for c in range(33, 127))
CHAR_INDEX = {c: i + 2 for i, c in enumerate(CHARS)}
MAX_WORD_CHARS = 20
URL_PATTERN = re.compile(r"^https?://", re.IGNORECASE)


# --- The notebook's exercises, reference versions ---------------------------------------

def normalize_token(token: str) -> str:
    """`@user` -> `<USR>`, `http(s)://...` -> `<URL>`, any other token lowercased.

    Library version of notebook 05's exercise `normalize_token`.

    A mention is `@` followed by at least one character (a lone `@` stays);
    a URL starts with `http://` or `https://`, in any case. GloVe 6B is
    lowercase, so other tokens are lowercased to find their GloVe row; the
    character features keep the case.
    """
    if len(token) > 1 and token.startswith("@"):
        return USR
    if URL_PATTERN.match(token):
        return URL
    return token.lower()


def normalize_sentence(tokens: Iterable[str]) -> list[str]:
    return [normalize_token(t) for t in tokens]


def build_vocab(sentences: Iterable[Sequence[str]], glove_words: Sequence[str],
                min_count: int = 1) -> dict[str, int]:
    """Token -> id: `<PAD>` 0, `<UNK>` 1, GloVe word `i` at `i + 2`, then the tokens of
    `sentences` that GloVe lacks and that occur at least `min_count` times, in order of
    first occurrence.

    Library version of notebook 05's exercise `build_vocab`.
    """
    vocab = {PAD: 0, UNK: 1}
    for word in glove_words:
        vocab.setdefault(word, len(vocab))
    counts = Counter(token for sentence in sentences for token in sentence)
    for token in counts:  # a Counter keeps the order of first occurrence
        if token not in vocab and counts[token] >= min_count:
            vocab[token] = len(vocab)
    return vocab

def encode_batch(sentences, vocab: dict[str, int], tag_index: dict[str, int]):
    """Padded arrays of a batch of `(tokens, tags)`: `(ids, tags, lengths)`.

    Library version of notebook 05's exercise `encode_batch`.

    ids, tags: int32 (batch, longest), 0 after each sentence's end; a token not in
    `vocab` gets `vocab["<UNK>"]`; lengths: int32 (batch,).
    """
    lengths = np.array([len(tokens) for tokens, _ in sentences], np.int32)
    width = int(lengths.max()) if len(lengths) else 0
    ids = np.zeros((len(lengths), width), np.int32)
    tags = np.zeros((len(lengths), width), np.int32)
    unk = vocab[UNK]
    for row, (tokens, sentence_tags) in enumerate(sentences):
        ids[row, : len(tokens)] = [vocab.get(t, unk) for t in tokens]
        tags[row, : len(tokens)] = [tag_index[t] for t in sentence_tags]
    return ids, tags, lengths


def masked_cross_entropy(tags, logits, lengths):
    """Cross-entropy averaged over each sentence's real tokens, then over the batch.

    Library version of notebook 05's exercise `masked_cross_entropy`.

    tags: int (batch, time); logits: float (batch, time, num_tags); lengths: int (batch,).
    Whatever tags and logits hold after a sentence's length (an id out of range, NaN)
    changes neither the loss nor its gradient.
    """
    logits = tf.convert_to_tensor(logits)
    real = tf.sequence_mask(lengths, tf.shape(logits)[1])
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.where(real, tf.cast(tags, tf.int32), 0),
        logits=tf.where(real[..., None], logits, tf.zeros_like(logits)))
    mask = tf.cast(real, logits.dtype)
    per_sentence = tf.reduce_sum(per_token * mask, axis=1) / tf.cast(lengths, logits.dtype)
    return tf.reduce_mean(per_sentence)


def build_tagger(pretrained, num_new_rows: int, num_tags: int, units: int = 64,
                 num_chars: int = 0, char_dim: int = 25, char_filters: int = 50,
                 dropout: float = 0.3) -> keras.Model:
    """Word ids (batch, time) -> logits (batch, time, num_tags).

    Library version of notebook 06's exercise `build_tagger`.

    pretrained: (P, d) frozen rows (padding and `<UNK>` first, then GloVe); the
    `num_new_rows` after them train. A bidirectional LSTM of `units` per direction
    reads the embeddings, masked at id 0. With `num_chars > 0`, the model takes
    `[word_ids, char_ids]`, char_ids (batch, time, chars) with 0 padding, and a
    character CNN (width 3, max over the word) adds `char_filters` features per token.
    """
    words = keras.Input((None,), dtype="int32", name="word_ids")
    embedding = PartiallyFrozenEmbedding(pretrained, num_new_rows, mask_zero=True,
                                         name="word_embedding")
    x = embedding(words)
    inputs = words
    if num_chars:
        chars = keras.Input((None, None), dtype="int32", name="char_ids")
        c = CharCNN(num_chars, char_dim, char_filters, name="char_cnn")(chars)
        x = keras.layers.Concatenate(name="word_and_chars")([x, c])
        inputs = [words, chars]
    if dropout:
        x = keras.layers.Dropout(dropout)(x)
    x = keras.layers.Bidirectional(keras.layers.LSTM(units, return_sequences=True),
                                   name="bilstm")(x)
    if dropout:
        x = keras.layers.Dropout(dropout)(x)
    logits = keras.layers.Dense(num_tags, name="tag_logits")(x)
    return keras.Model(inputs, logits, name="bilstm_tagger")


@keras.saving.register_keras_serializable(package="sparse_embeddings")
class CharCNN(keras.layers.Layer):
    """Character features of each token: ids (b, t, c) -> (b, t, filters).

    Embeds the characters (id 0 pads), runs a width-3 convolution with ReLU over
    each word and takes the maximum over its real characters; a padding token
    (no characters) gives zeros.
    """

    def __init__(self, num_chars, char_dim=25, filters=50, width=3, **kwargs):
        super().__init__(**kwargs)
        self.num_chars, self.char_dim = int(num_chars), int(char_dim)
        self.filters, self.width = int(filters), int(width)
        self.embedding = keras.layers.Embedding(self.num_chars, self.char_dim)
        self.conv = keras.layers.Conv1D(self.filters, self.width, padding="same",
                                        activation="relu")

    def build(self, input_shape):
        self.embedding.build((None, None))
        self.conv.build((None, None, self.char_dim))
        self.built = True

    def call(self, chars):
        chars = tf.convert_to_tensor(chars)
        shape = tf.shape(chars)
        words = tf.reshape(chars, [-1, shape[2]])  # one row per token
        features = self.conv(self.embedding(words))
        real = tf.cast(words > 0, features.dtype)[..., None]
        pooled = tf.reduce_max(features * real, axis=1)  # ReLU features are >= 0
        return tf.reshape(pooled, tf.concat([shape[:2], [self.filters]], axis=0))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.filters,)

    def get_config(self):
        config = super().get_config()
        config.update({"num_chars": self.num_chars, "char_dim": self.char_dim,
                       "filters": self.filters, "width": self.width})
        return config


def train_step(model, optimizer, batch, clip_norm: float = 5.0):
    """One training step on `batch = (inputs, tags, lengths)`; returns the loss.

    Library version of notebook 06's exercise `train_step`.

    The gradients are clipped to a global norm of `clip_norm` with
    `tf.clip_by_global_norm`, which scales an `IndexedSlices` without densifying it,
    so that `LazyAdam` updates only the embedding rows looked up.
    """
    inputs, tags, lengths = batch
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = masked_cross_entropy(tags, logits, lengths)
    variables = model.trainable_variables
    grads, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), clip_norm)
    optimizer.apply_gradients(zip(grads, variables, strict=True))
    return loss


# --- What is not the lesson: the inputs (pretrained matrix, characters, normal forms) ---

def pretrained_matrix(glove_vectors) -> np.ndarray:
    """The frozen rows of the vocabulary: zeros for `<PAD>` and `<UNK>`, then GloVe."""
    glove_vectors = np.asarray(glove_vectors, dtype=np.float32)
    return np.concatenate([np.zeros((2, glove_vectors.shape[1]), np.float32), glove_vectors])


def encode_chars(sentences, width: int | None = None,
                 max_word_chars: int = MAX_WORD_CHARS) -> np.ndarray:
    """Character ids (batch, longest sentence, max_word_chars) of raw (cased) tokens."""
    width = width or max((len(tokens) for tokens, _ in sentences), default=0)
    out = np.zeros((len(sentences), width, max_word_chars), np.int32)
    for row, (tokens, _) in enumerate(sentences):
        for col, token in enumerate(tokens[:width]):
            ids = [CHAR_INDEX.get(c, 1) for c in token[:max_word_chars]]
            out[row, col, : len(ids)] = ids
    return out


def glove_form(token: str, known) -> str:
    """A normalized hashtag whose word GloVe knows reads that word: `#paris` -> `paris`.

    `known` is a set (or dict) of GloVe words. Other tokens are returned as they are.
    The character features still see the `#`.
    """
    if len(token) > 1 and token[0] == "#" and token not in known and token[1:] in known:
        return token[1:]
    return token


def normalized(sentences, known=None):
    """`(tokens, tags)` with the tokens normalized (and hashtags read as their GloVe word,
    with `known`); tags kept."""
    out = []
    for tokens, tags in sentences:
        forms = normalize_sentence(tokens)
        if known is not None:
            forms = [glove_form(t, known) for t in forms]
        out.append((forms, list(tags)))
    return out
