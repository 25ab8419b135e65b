# Quick start: `make demo` runs the demo on the bundled models, `make test` runs the whole test suite
# (newest dependencies, the wheel check included), `make test-optimum` (a real optimum-intel export) and then
# `make test-lowest`: the tests again with every dependency at the minimum pyproject.toml declares, in
# .venv-lowest (OpenVINO and torch tests skip there).
# Each target creates its venv and installs what it needs on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOWEST := .venv-lowest
LOWEST_STAMP := $(LOWEST)/.installed

.PHONY: demo test test-newest test-lowest test-optimum bench conformance clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,torch,zoo,llm]' 'torch==2.13.0'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/onnx-bridge demo

test: test-newest test-optimum test-lowest

test-newest: $(STAMP)
	$(BIN)/python -m pytest -n 2 -q

$(LOWEST_STAMP): pyproject.toml .ci/lowest_constraints.py
	rm -rf $(LOWEST)
	$(PYTHON) -m venv $(LOWEST)
	$(LOWEST)/bin/python -m pip install -q --upgrade pip
	$(LOWEST)/bin/python .ci/lowest_constraints.py > $(LOWEST)/constraints.txt
	$(LOWEST)/bin/python -m pip install -q --only-binary=:all: -c $(LOWEST)/constraints.txt -e . \
		'pytest>=8' 'pytest-xdist>=3.5' 'hypothesis>=6.100'
	touch $@

test-lowest: $(LOWEST_STAMP)
	@echo "lowest declared versions:" && cat $(LOWEST)/constraints.txt
	$(LOWEST)/bin/python -c "import numpy, onnx, onnxruntime as ort, onnxruntime_extensions as ortx; \
		print('testing with numpy', numpy.__version__, 'onnx', onnx.__version__, 'onnxruntime', \
		ort.__version__, 'onnxruntime-extensions', ortx.__version__)"
	$(LOWEST)/bin/python -m pytest -n 2 -q -m "not wheel"

# A real optimum-intel LLM export (tests/test_llm_optimum.py): optimum-intel pins transformers < 5.6, so it gets
# its own venv. Part of `make test` (CI keeps one test on a real export): measured on the shared 2-core machine
# 6.6 min to install and 3.6 min to run at a load average of 23-27, 1.6 min to run at 10-15.
OPTIMUM := .venv-optimum
$(OPTIMUM)/.installed: pyproject.toml
	$(PYTHON) -m venv $(OPTIMUM)
	$(OPTIMUM)/bin/python -m pip install -q --upgrade pip
	$(OPTIMUM)/bin/python -m pip install -q -e '.[test,torch,llm]' 'torch==2.13.0' 'optimum-intel[openvino]==2.2.0' \
		'transformers>=5,<5.6'
	touch $@

test-optimum: $(OPTIMUM)/.installed
	$(OPTIMUM)/bin/python -m pytest -n 2 -q tests/test_llm_optimum.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/real_models.py
	$(BIN)/python benchmarks/ir_ops.py

conformance: $(STAMP)
	$(BIN)/onnx-bridge conformance

clean:
	rm -rf $(VENV) $(LOWEST) $(OPTIMUM) .pytest_cache .hypothesis build *.egg-info
