# The course's commands. Each one creates .venv and installs what is missing first,
# so they work on a fresh clone; once installed, they start at once.
#
#   make lab       open the course: JupyterLab on notebooks/
#   make class     a JupyterHub for a class on this machine (as root; accounts in hub.toml)
#   make instructor  set up an instructor's machine for grading: the course, bubblewrap
#                  (the grading sandbox; as root), a check that grading works here
#   make test      run the whole test suite (what CI runs)
#   make check     the fast tier for the inner loop: no slow or browser test (minutes)
#   make release   regenerate notebooks/ from solutions/ with nbgrader
#   make points    points per notebook and exercise
#   make mutants   grade the mutant submissions of every notebook (slow)
#   make demo      build a synthetic class, grade it with course-grade, show the table

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LAB_ARGS ?=
# JupyterLab refuses to run as root unless told (containers, CI machines).
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)
PYTEST_ARGS ?=

# nbgrader calls `alembic` and `jupyter` by name: the venv's scripts come first.
export PATH := $(abspath $(BIN)):$(PATH)
export TF_CPP_MIN_LOG_LEVEL ?= 3

.PHONY: install instructor system system-test lab class test check release points mutants \
	doctor demo clean

# the course and the grading sandbox (bubblewrap: installed when missing and run as root)
install: $(STAMP) system

# An instructor's machine: what `install` sets up, checked (TensorFlow, the data, every
# notebook, the sandbox), and the commands to grade with.
instructor: install
	@$(BIN)/course doctor || true
	@echo "Grading is set up: source $(VENV)/bin/activate, then course-grade class" \
	      "SUBMISSIONS --out grading/ (README: Grading a class without the hub)."

# Debian packages: bubblewrap is the grading sandbox (self-grading and class grading),
# chromium the browser of the browser tests. Installed when missing and running as root.
system:
	@scripts/system-packages.sh bwrap:bubblewrap

system-test:
	@scripts/system-packages.sh bwrap:bubblewrap chromium:chromium npm:npm

$(STAMP): pyproject.toml library/pyproject.toml
	@test -n "$(PYTHON)" || { echo "No python3 found: install Python 3.11 first."; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ./library -e ".[dev]"
	@touch $(STAMP)

# JupyterLab's defaults for this environment: no "get notified about Jupyter news?" pop-up
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json

lab: $(STAMP) system
	@$(BIN)/course doctor
	@mkdir -p $(dir $(LAB_OVERRIDES)) && cp autograder/lab-overrides.json $(LAB_OVERRIDES)
	$(BIN)/jupyter lab --notebook-dir=notebooks $(ROOT_ARGS) $(LAB_ARGS)

# nodejs/npm: JupyterHub's proxy (configurable-http-proxy, installed from npm on first use)
class: $(STAMP) system
	@scripts/system-packages.sh npm:npm
	$(BIN)/course hub $(if $(HUB_CONFIG),--config $(HUB_CONFIG))

test: $(STAMP) system-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)

check: $(STAMP)
	COURSE_TIER=check $(BIN)/python -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

release: $(STAMP)
	$(BIN)/course release

points: $(STAMP)
	@$(BIN)/course points

doctor: $(STAMP)
	@$(BIN)/course doctor

mutants: $(STAMP)
	@for dir in tests/mutants/*/; do $(BIN)/course mutants $$(basename $$dir) || exit 1; done

demo: $(STAMP) system
	$(BIN)/course-grade demo

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
