# Everything sets itself up on a fresh machine that has only Python, gcc and apt.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench,mpi]"
	# Xilinx's HLS headers for the hls target's C simulation (its own dependencies are not needed)
	$(PY) -m pip install -q --no-deps hls4ml
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m mascarpone.demo

test: $(STAMP)
	$(PY) -m pytest tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
