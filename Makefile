# Everything sets itself up on a fresh machine that has only Python, gcc and apt.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test bench clean opencl-driver gpu-check

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[test,bench,gpu,mpi]"
	# Xilinx's HLS headers for the hls target's C simulation (its own dependencies are not needed)
	$(PY) -m pip install -q --no-deps hls4ml
	$(MAKE) opencl-driver
	touch $(STAMP)

# The "opencl" target needs an OpenCL driver: PoCL (OpenCL on this machine's CPU) from Debian when the ICD
# loader finds no platform with a device; a machine with a vendor's driver keeps it.
opencl-driver:
	@if $(PY) -c "import pyopencl as cl, sys; sys.exit(0 if any(p.get_devices() for p in cl.get_platforms()) else 1)" 2>/dev/null; then \
		echo "OpenCL: a platform is present"; \
	elif command -v apt-get >/dev/null; then \
		echo "OpenCL: installing PoCL (pocl-opencl-icd, ocl-icd-opencl-dev)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd ocl-icd-opencl-dev >/dev/null) \
			|| echo "OpenCL: PoCL could not be installed; the opencl target's tests will be skipped"; \
	else \
		echo "OpenCL: no platform and no apt-get; the opencl target's tests will be skipped"; \
	fi

demo: $(STAMP)
	$(PY) -m mascarpone.demo

test: $(STAMP)
	$(PY) -m pytest tests

# on a machine with an NVIDIA GPU: the GPU tests, each kernel launched on "cuda" too (and on "opencl" where
# a platform exists), then the cuda target beside Halide's CUDA target (benchmarks/gpu.py --target cuda)
gpu-check: $(STAMP)
	$(PY) -m pytest -rs tests/test_gpu_programs.py tests/test_gpu_halide.py tests/test_gpu_semantics.py
	$(PY) benchmarks/gpu.py --target cuda
	$(PY) benchmarks/gpu_calls.py --target cuda

# the default suite at paper sizes; prints what changed since the last published run, then writes
# README's benchmark tables, a section of benchmarks/RESULTS.md and benchmarks/RESULTS.json from it
BENCH_OUT := benchmarks/results
bench: $(STAMP)
	$(PY) -m mascarpone.cli bench --sizes paper --out $(BENCH_OUT) \
	    $(if $(wildcard benchmarks/RESULTS.json),--compare benchmarks/RESULTS.json)
	$(PY) -m mascarpone.cli bench --publish $(BENCH_OUT)

clean:
	rm -rf $(VENV) build *.egg-info
