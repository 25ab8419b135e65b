# Quick start: `make demo` runs the demo on the bundled models, `make test` runs the whole test suite.
# Each target creates .venv and installs what it needs on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench conformance clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,torch]' 'torch==2.13.0'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/onnx-bridge demo

test: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

conformance: $(STAMP)
	$(BIN)/onnx-bridge conformance

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
