"""`benchmarks/bench_ner.py` on a tiny setting: prints its tables, writes JSON and CoNLL, scores an
extra file, saves a model and evaluates it again from the .keras file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from embeddings_course import data

SCRIPT = ROOT / "benchmarks" / "bench_ner.py"


def run(*args, timeout=150):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    completed = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                               text=True, timeout=timeout, env=env, cwd=ROOT)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


@pytest.mark.slow
def test_ner_benchmark_smoke(tmp_path):
    extra = tmp_path / "unseen.conll"
    data.write_conll([(["Visit", "Paris", "@bob", "http://t.co"], ["O", "B-geo-loc", "O", "O"]),
                      (["Apple", "rocks"], ["B-company", "O"])], extra)
    out, predictions, model = tmp_path / "ner.json", tmp_path / "pred.conll", tmp_path / "m.keras"
    completed = run("--train-tweets", "64", "--epochs", "1",
                    "--models", "glove+chars,random+chars", "--eval", str(extra),
                    "--out", str(out), "--predictions", str(predictions), "--save", str(model))
    printed = completed.stdout
    for text in ("val F1", "test F1", "train s", "tokens/s", "unseen.conll", "glove+chars",
                 "random+chars", "Test F1 per type", "person", "Targets:",
                 "beats the baseline"):
        assert text in printed, f"{text!r} missing from the printed table:\n{printed}"
    assert "training glove+chars" in completed.stderr  # progress goes to stderr

    report = json.loads(out.read_text())
    assert [r["model"] for r in report["runs"]] == ["glove+chars", "random+chars"]
    for r in report["runs"]:
        assert {"validation", "test", f"eval:{extra}"} <= set(r["scores"])
        assert 0 <= r["scores"]["test"]["f1"] <= 1 and r["tokens_per_second"] > 0
    assert report["data"]["train"]["tweets"] == 64
    test_split = data.wnut16_split()["test"]
    written = data.read_conll(predictions)
    assert [t for t, _ in written] == [t for t, _ in test_split]

    again = run("--load", str(model), "--eval", str(extra), "--out", str(tmp_path / "l.json"),
                "--predictions", str(tmp_path / "p2.conll"))
    loaded = json.loads((tmp_path / "l.json").read_text())["runs"][0]
    first = report["runs"][0]["scores"]
    assert loaded["scores"]["test"]["f1"] == first["test"]["f1"]
    assert loaded["scores"][f"eval:{extra}"]["f1"] == first[f"eval:{extra}"]["f1"]
    assert "loaded:m.keras" in again.stdout
