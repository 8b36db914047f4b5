# Everything sets itself up on a fresh machine that has only Python, gcc and apt.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench]"
	# Xilinx's HLS headers for the hls target's C simulation (its own dependencies are not needed)
	$(PY) -m pip install -q --no-deps hls4ml
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m mascarpone.demo

test: $(STAMP)
	$(PY) -m pytest tests

# the default suite at paper sizes; prints what changed since the last published run, then writes
# README's benchmark tables, a section of benchmarks/RESULTS.md and benchmarks/RESULTS.json from it
BENCH_OUT := benchmarks/results
bench: $(STAMP)
	$(PY) -m mascarpone.cli bench --sizes paper --out $(BENCH_OUT) \
	    $(if $(wildcard benchmarks/RESULTS.json),--compare benchmarks/RESULTS.json)
	$(PY) -m mascarpone.cli bench --publish $(BENCH_OUT)

clean:
	rm -rf $(VENV) build *.egg-info
