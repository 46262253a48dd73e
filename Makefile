# Two commands for a fresh Linux machine with Python 3.11:
#   make demo   set up, then run the main job (mlmh eval --preset pan) offline
#   make test   set up, then run the test suite
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
# pip extras: `make test EXTRAS=test,ray` also installs Ray for the --backend ray tests (what CI runs)
EXTRAS ?= test
comma  := ,
STAMP  := $(VENV)/.installed-$(subst $(comma),-,$(EXTRAS))

.PHONY: setup demo test quick wordnet clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (or: make PYTHON=python3 ...)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch first and pinned: the CPU build; an unpinned torch would pull a multi-GB CUDA build
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

setup: $(STAMP)
	-$(BIN)/mlmh doctor --fix >/dev/null 2>&1 || true

demo: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/mlmh eval --preset pan

quick: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/mlmh eval --preset quick

test: setup
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest -n 2 -q

clean:
	rm -rf $(VENV) build *.egg-info runs
