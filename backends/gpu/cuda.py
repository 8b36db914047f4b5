"""Target "cuda": CUDA C kernels compiled to PTX by NVRTC (or nvcc), launched through the driver API.

Compiling needs no GPU: `f.compile("cuda")` prints the kernels, compiles them
to PTX for `arch` (default: the device's, else sm_80) and returns a kernel
whose `source("cuda")` and `source("ptx")` show the code; calling it loads the
PTX on the first CUDA device, and where there is none raises a TargetError
saying so. Device arrays are objects with `__cuda_array_interface__` (CuPy,
Numba, PyTorch...); outputs a call allocates on the device are `DeviceArray`s.
Floats: `+ - * / sqrt` are IEEE (nvcc's and NVRTC's defaults), FMA contraction
off with fp_contract=False (-fmad=false); `exp log sin cos tan tanh pow atan2`
are CUDA's libdevice, within a few ulps of glibc's.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile

import numpy as np

from mascarpone.middleend.errors import ArgumentError, NotSupportedError, TargetError
from mascarpone.middleend.types import DType

from .host import BufferPool, DeviceAdapter, GPUKernel, Profile, check_block_size
from .printer import GPUDialect

DEFAULT_ARCH = "sm_80"
#: bytes of constant memory a module has
CONSTANT_BYTES = 64 * 1024
#: the limits every CUDA device since compute capability 2.0 has (the device's are checked at launch)
MAX_THREADS, MAX_BLOCK_DIMS = 1024, (1024, 1024, 64)

_PUN = {("float32", "int32"): "__float_as_int(x)", ("float32", "uint32"): "__float_as_uint(x)",
        ("int32", "float32"): "__int_as_float(x)", ("uint32", "float32"): "__uint_as_float(x)",
        ("float64", "int64"): "(int64_t)__double_as_longlong(x)",
        ("float64", "uint64"): "(uint64_t)__double_as_longlong(x)",
        ("int64", "float64"): "__longlong_as_double((long long)x)",
        ("uint64", "float64"): "__longlong_as_double((long long)x)"}


class CUDADialect(GPUDialect):
    name = "cuda"
    helper_qualifier = "static __device__ __forceinline__"
    kernel_qualifier = 'extern "C" __global__'
    restrict = "__restrict__"

    def includes(self):
        # NVRTC has no C library headers; nvcc's <stdint.h> defines the same widths
        return ["#ifdef __CUDACC_RTC__",
                "typedef signed char int8_t;", "typedef short int16_t;", "typedef int int32_t;",
                "typedef long long int64_t;", "typedef unsigned char uint8_t;", "typedef unsigned short uint16_t;",
                "typedef unsigned int uint32_t;", "typedef unsigned long long uint64_t;",
                "#else", "#include <stdint.h>", "#endif"]

    def float_literal(self, value, dt):
        import math
        if math.isnan(value) or math.isinf(value):
            if dt.bits == 32:
                bits = 0x7fc00000 if math.isnan(value) else 0x7f800000 if value > 0 else 0xff800000
                return f"__uint_as_float({bits}u)"
            bits = 0x7ff8000000000000 if math.isnan(value) else 0x7ff0000000000000 if value > 0 \
                else 0xfff0000000000000
            return f"__longlong_as_double((long long){bits}ULL)"
        return super().float_literal(value, dt)

    def bits_body(self, src: DType, dst: DType) -> str:
        pun = _PUN.get((src.name, dst.name))
        if pun is None:   # integers of the same width: a conversion keeps the bits
            pun = f"({self.scalar(dst)})x"
        return f"    return {pun};\n"

    def group_id(self, dim):
        return f"blockIdx.{'xyz'[dim]}"

    def local_id(self, dim):
        return f"threadIdx.{'xyz'[dim]}"

    def num_groups(self, dim):
        return f"gridDim.{'xyz'[dim]}"

    def local_size(self, dim):
        return f"blockDim.{'xyz'[dim]}"

    def barrier(self):
        return "__syncthreads();"

    def pointer_arg(self, memory, ctype, ident, const):
        return f"{'const ' if const else ''}{ctype} *__restrict__ {ident}"

    def global_pointer(self, ctype):
        return f"{ctype} *"

    def shared_array(self, ctype, ident, count):
        return f"__shared__ {ctype} {ident}[{count}];"

    def constant_array(self, ctype, ident, count):
        return f"__constant__ {ctype} {ident}[{count}];"

    def constant_capacity(self, buffer):
        """Elements of a constant input's module array: its size where that is a constant, else its share
        of the constant memory (checked at each call)."""
        from mascarpone.backends.common.temporaries import constant_bytes
        nbytes = constant_bytes(buffer)
        if nbytes is not None:
            return max(nbytes // buffer.dtype.bytes, 1)
        return CONSTANT_BYTES // 4 // buffer.dtype.bytes


# compiling -------------------------------------------------------------------------------------------
def _nvrtc():
    try:
        from cuda.bindings import nvrtc
        nvrtc.nvrtcVersion()
        return nvrtc
    except Exception:   # the package or its library is missing
        return None


def nvcc_path():
    return shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)


def missing_compiler() -> str | None:
    """What this machine lacks to compile CUDA kernels to PTX, or None."""
    if _nvrtc() is None and nvcc_path() is None:
        return "NVRTC (the cuda-python and nvidia-cuda-nvrtc-cu12 packages) or nvcc"
    return None


def _arch_number(arch):
    text = str(arch)
    for prefix in ("sm_", "compute_"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    if not text.isdigit():
        raise TargetError(f"target 'cuda': arch must look like 'sm_80' or 'sm_90', got {arch!r}")
    return text


def ptx(source, arch=DEFAULT_ARCH, *, fp_contract=True, fast_math=False, what="kernel") -> str:
    """The PTX of CUDA C `source` for `arch`, by NVRTC where installed, else nvcc."""
    number = _arch_number(arch)
    flags = [f"-fmad={'true' if fp_contract else 'false'}"] + (["--use_fast_math"] if fast_math else [])
    nvrtc = _nvrtc()
    if nvrtc is not None:
        err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
        opts = [f"--gpu-architecture=compute_{number}".encode()] + [f.encode() for f in flags]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            _, size = nvrtc.nvrtcGetProgramLogSize(prog)
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(prog, log)
            raise NotSupportedError(f"{what}: NVRTC failed on the generated CUDA code:\n"
                                    + "\n".join(log.decode(errors="replace").splitlines()[:30]))
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        out = b" " * size
        nvrtc.nvrtcGetPTX(prog, out)
        nvrtc.nvrtcDestroyProgram(prog)
        return out.rstrip(b"\0 ").decode()
    nvcc = nvcc_path()
    if nvcc is None:
        raise TargetError(f"target 'cuda' cannot compile here: {missing_compiler()}")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "kernel.cu"), os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(source)
        run = subprocess.run([nvcc, "-ptx", f"-arch=sm_{number}", *flags, "-o", out, src],
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise NotSupportedError(f"{what}: nvcc failed on the generated CUDA code:\n"
                                    + "\n".join(run.stderr.splitlines()[:30]))
        with open(out) as f:
            return f.read()


def compile_cuda(lowered, *, fp_contract=True, fast_math=False, arch=None):
    """Print `lowered` as CUDA C and compile it to PTX; see the module docstring."""
    from .program import build
    lack = missing_compiler()
    if lack:
        raise TargetError(f"target 'cuda' cannot compile here: it needs {lack}; install it with: "
                          f"pip install 'mascarpone[gpu]'")
    source, host, kernels, names = build(lowered, CUDADialect(), constants_at_module=True,
                                  check_block=lambda name, block: check_block_size(name, block, MAX_THREADS,
                                                                                   MAX_BLOCK_DIMS))
    constants = [b for b in lowered.inputs if b.memory == "constant"]
    dialect = CUDADialect()
    total = sum(dialect.constant_capacity(b) * b.dtype.bytes for b in constants)
    if total > CONSTANT_BYTES:
        raise TargetError(f"{lowered.name}: its inputs in constant memory take {total} bytes; a CUDA module has "
                          f"{CONSTANT_BYTES}")
    if arch is None:
        arch = device_arch() or DEFAULT_ARCH
    code = ptx(source, arch, fp_contract=fp_contract, fast_math=fast_math, what=f"kernel {lowered.name}")
    runtime = CUDARuntime(code, constants, dialect)
    runtime.constant_names = names
    return CUDAKernel(lowered, host, kernels, runtime, source, code, arch)


# running -----------------------------------------------------------------------------------------------
def _driver():
    try:
        from cuda.bindings import driver
        return driver
    except Exception:
        return None


def _check(result, what):
    """What a driver call returned after its status (None, one value, or a tuple of several); a TargetError
    naming `what` where the status is an error."""
    if type(result) is not tuple:
        result = (result,)
    if result[0]:     # (CUresult is an int; 0 is success)
        raise TargetError(f"CUDA driver: {what} failed with {result[0]!r}")
    n = len(result)
    return None if n == 1 else result[1] if n == 2 else result[1:]


@functools.lru_cache(maxsize=None)
def _device():
    """(driver module, device, context) of the first CUDA device, or a TargetError saying why there is none."""
    driver = _driver()
    if driver is None:
        raise TargetError("target 'cuda' cannot run kernels here: the cuda-python package is missing (pip install "
                          "'mascarpone[gpu]')")
    try:
        result = driver.cuInit(0)
        err = result[0] if isinstance(result, tuple) else result
    except Exception as exc:   # no driver library: cuda-python raises before cuInit runs
        err = f"{type(exc).__name__}: {exc}"
    if not isinstance(err, str) and int(err) == 0:
        pass
    else:
        raise TargetError(f"target 'cuda' cannot run kernels here: no CUDA device (cuInit returned {err!r}); the "
                          f"kernel compiled to PTX (source('ptx')) and runs on a machine with an NVIDIA GPU")
    n = _check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
    if not n:
        raise TargetError("target 'cuda' cannot run kernels here: the CUDA driver finds no device")
    dev = _check(driver.cuDeviceGet(0), "cuDeviceGet")
    ctx = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    _check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return driver, dev, ctx


def device_arch():
    """'sm_XY' of the first CUDA device, or None where there is none."""
    try:
        driver, dev, _ = _device()
    except TargetError:
        return None
    attr = driver.CUdevice_attribute
    major = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attribute")
    minor = _check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attribute")
    return f"sm_{major}{minor}"


def device_name() -> str:
    """The name of the first CUDA device (a TargetError where there is none)."""
    driver, dev, _ = _device()
    name = _check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return bytes(name).split(b"\0")[0].decode()


def copy_bandwidth_gbs(nbytes=1 << 30, repeat=21) -> float:
    """The first CUDA device's copy bandwidth in GB/s, bytes read plus bytes written: the median over
    `repeat` device-to-device copies of `nbytes`, timed by events (the bar for memory-bound kernels)."""
    driver, _, _ = _device()
    src, dst = DeviceArray((nbytes,), np.uint8), DeviceArray((nbytes,), np.uint8)
    start, stop = (_check(driver.cuEventCreate(0), "cuEventCreate") for _ in range(2))
    times = []
    try:
        for _ in range(repeat + 1):      # (the first, a warm-up, is not counted)
            _check(driver.cuEventRecord(start, 0), "cuEventRecord")
            _check(driver.cuMemcpyDtoD(dst.ptr, src.ptr, nbytes), "cuMemcpyDtoD")
            _check(driver.cuEventRecord(stop, 0), "cuEventRecord")
            _check(driver.cuEventSynchronize(stop), "cuEventSynchronize")
            times.append(_check(driver.cuEventElapsedTime(start, stop), "cuEventElapsedTime"))
    finally:
        driver.cuEventDestroy(start)
        driver.cuEventDestroy(stop)
    return 2 * nbytes / (float(np.median(times[1:])) * 1e6)


class DeviceArray:
    """An array in CUDA device memory (a call's output, or `to_device`'s copy): `__cuda_array_interface__`;
    `get()` copies it to a numpy array, `set(a)` and `fill(v)` write it."""

    def __init__(self, shape, dtype, ptr=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self._owned = ptr is None
        if ptr is None:
            driver, _, _ = _device()
            ptr = int(_check(driver.cuMemAlloc(max(self.nbytes, 1)), "cuMemAlloc"))
        self.ptr = ptr

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "strides": None,
                "version": 3}

    def get(self):
        out = np.empty(self.shape, self.dtype)
        if self.nbytes:
            driver, _, _ = _device()
            _check(driver.cuMemcpyDtoH(out.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return out

    def set(self, array):
        """Copy the numpy array `array` (this array's shape; converted to its dtype) into it."""
        array = np.ascontiguousarray(array, self.dtype)
        if array.shape != self.shape:
            raise ArgumentError(f"DeviceArray.set: expected shape {self.shape}, got {array.shape}")
        if self.nbytes:
            driver, _, _ = _device()
            _check(driver.cuMemcpyHtoD(self.ptr, array.ctypes.data, self.nbytes), "cuMemcpyHtoD")

    def fill(self, value):
        """Set every element to `value`."""
        self.set(np.full(self.shape, value, self.dtype))

    def __del__(self):
        if getattr(self, "_owned", False):
            driver = _driver()
            if driver is not None:
                driver.cuMemFree(self.ptr)


class _View:
    """Shape, dtype and pointer of a foreign object with `__cuda_array_interface__`."""

    def __init__(self, obj):
        cai = obj.__cuda_array_interface__
        self.obj = obj
        self.shape = tuple(cai["shape"])
        self.ndim = len(self.shape)
        self.dtype = np.dtype(cai["typestr"])
        self.ptr = int(cai["data"][0])
        self.readonly = bool(cai["data"][1])
        strides = cai.get("strides")
        expected = []
        step = self.dtype.itemsize
        for d in reversed(self.shape):
            expected.insert(0, step)
            step *= d
        self.contiguous = strides is None or tuple(strides) == tuple(expected)
        self.nbytes = step


def _as_view(a):
    """`a` with `ptr` and `nbytes`: our DeviceArray or _View as it is, another device array viewed."""
    return a if isinstance(a, (DeviceArray, _View)) else _View(a)


class CUDARuntime(DeviceAdapter, BufferPool):
    """Loads the PTX on first use; buffers, copies, launches and timing events of the driver API."""

    def __init__(self, code, constants, dialect):
        self.code, self.constants, self.dialect = code, constants, dialect
        self.module = None
        self.events, self.spare_events = [], []
        self.constant_addresses = {}
        self._init_pool()

    def ready(self):
        driver, _, _ = _device()
        self.driver = driver
        if self.module is None:
            self.module = _check(driver.cuModuleLoadData(self.code.encode() + b"\0"), "cuModuleLoadData")
            self.stream = _check(driver.cuStreamCreate(0), "cuStreamCreate")
        return self

    def function(self, name):
        return _check(self.driver.cuModuleGetFunction(self.module, name.encode()), f"loading {name}")

    # the binder's device adapter -------------------------------------------------------------------
    def owns(self, a):
        return isinstance(a, (DeviceArray, _View)) or hasattr(a, "__cuda_array_interface__")

    def check(self, name, a, output):
        view = _as_view(a)
        if isinstance(view, _View) and not view.contiguous:
            raise ArgumentError(f"{name}: a device array must be C-contiguous")
        if output and isinstance(view, _View) and view.readonly:
            raise ArgumentError(f"{name}: the device array is read-only")

    def empty(self, shape, dtype, zero):
        a = DeviceArray(shape, dtype)
        if zero:
            self.zero(a)
        return a

    def zero(self, a):
        view = _as_view(a)
        if view.nbytes:
            _check(self.driver.cuMemsetD8Async(view.ptr, 0, view.nbytes, self.stream), "cuMemsetD8Async")

    def handle_of(self, a):
        return _as_view(a).ptr

    # a call ----------------------------------------------------------------------------------------------
    def begin(self):
        self.events = []
        self.pool = {}

    def _event(self):
        """An event recorded on the stream now (one a read or forgotten profile gave back, where one is)."""
        ev = self.spare_events.pop() if self.spare_events else _check(self.driver.cuEventCreate(0), "cuEventCreate")
        _check(self.driver.cuEventRecord(ev, self.stream), "cuEventRecord")
        return ev

    def _new_buffer(self, nbytes):
        return int(_check(self.driver.cuMemAlloc(nbytes), "cuMemAlloc"))

    def _drop_buffer(self, handle):
        self.driver.cuMemFree(handle)

    def upload(self, handle, array, name):
        if array.nbytes:
            start = self._event()
            _check(self.driver.cuMemcpyHtoDAsync(handle, array.ctypes.data, array.nbytes, self.stream), "copy in")
            self.events.append(("upload", name, start, self._event()))

    def download(self, array, handle, name):
        if array.nbytes:
            start = self._event()
            _check(self.driver.cuMemcpyDtoHAsync(array.ctypes.data, handle, array.nbytes, self.stream), "copy out")
            self.events.append(("download", name, start, self._event()))

    def check_block(self, name, block):
        check_block_size(name, block, MAX_THREADS, MAX_BLOCK_DIMS)

    def launch(self, k, grid, block, args):
        if k.handle is None:
            k.handle = self.function(k.entry_point)
        if args is not k.last_args and args != k.last_args:   # (packed again only when they changed)
            # buffers (pointers) first, then int64 sizes, then scratch pointers
            n_buf, n_scalar = len(k.buffers), len(k.scalars)
            values = [ctypes.c_uint64(int(a)) if i < n_buf or i >= n_buf + n_scalar else ctypes.c_int64(int(a))
                      for i, a in enumerate(args)]
            pointers = (ctypes.c_void_p * max(len(values), 1))(*[ctypes.addressof(v) for v in values])
            k.last_args, k.packed_args = args, (values, pointers, ctypes.addressof(pointers))
        start = self._event()
        _check(self.driver.cuLaunchKernel(k.handle, *grid, *block, 0, self.stream, k.packed_args[2], 0),
               f"launching {k.spec.name}")
        self.events.append(("kernel", k.spec.name, start, self._event()))

    def prepare(self, arguments, handles):
        """Copy the constant inputs into the module's constant arrays; `arguments`: (buffer, array) pairs."""
        if not self.constants:
            return
        arrays = {b.name: a for b, a in arguments}
        for buf in self.constants:
            a = arrays[buf.name]
            cap = self.dialect.constant_capacity(buf) * buf.dtype.bytes
            if a.nbytes > cap:
                raise ArgumentError(f"{buf.name}: {a.nbytes} bytes do not fit its {cap} bytes of constant memory")
            if a.nbytes:
                _check(self.driver.cuMemcpyDtoDAsync(self._constant_address(buf), handles[buf.name], a.nbytes,
                                                     self.stream), "constant copy")

    def _constant_address(self, buf):
        """The device address of `buf`'s constant array in the module (looked up once)."""
        ptr = self.constant_addresses.get(buf.name)
        if ptr is None:
            ident = self.constant_names[buf.name]
            ptr, _ = _check(self.driver.cuModuleGetGlobal(self.module, ident.encode()), f"constant {ident}")
            self.constant_addresses[buf.name] = ptr
        return ptr

    def finish(self):
        _check(self.driver.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

    def end(self):
        """The Profile of the call's events, read when first asked for; its events come back for reuse once
        read, or once the profile is forgotten."""
        held, self.events = self.events, []
        self._release()
        spare = self.spare_events

        def give_back():
            for _, _, a, b in held:
                spare.extend((a, b))
            held.clear()

        def times():
            for kind, name, a, b in held:
                err, elapsed = self.driver.cuEventElapsedTime(a, b)
                if not err:             # (an event of a call that failed before it ran is skipped)
                    yield kind, name, float(elapsed)
            give_back()
        return Profile(pending=times, release=give_back)


def to_device(array) -> DeviceArray:
    """A copy of the numpy array `array` in the first CUDA device's memory."""
    array = np.asarray(array)
    if array.dtype.kind not in "biuf":
        raise ArgumentError(f"to_device: a kernel takes arrays of numbers or bools, not {array.dtype}")
    out = DeviceArray(array.shape, array.dtype)
    out.set(array)
    return out


class CUDAKernel(GPUKernel):
    """A kernel of the "cuda" target: `source("cuda")` is its CUDA C, `source("ptx")` its PTX for `arch`."""

    target = "cuda"

    def __init__(self, lowered, host, kernels, runtime, source, code, arch):
        super().__init__(lowered, host, kernels, runtime, source)
        self.ptx, self.arch = code, arch
        self._views = {}

    def source(self, kind="cuda"):
        """The generated code: 'cuda' or 'ptx'."""
        if kind == "cuda":
            return self._source
        if kind == "ptx":
            return self.ptx
        raise ValueError(f"unknown source kind {kind!r} for a CUDA kernel; use 'cuda' or 'ptx'")

    def __call__(self, **kwargs):
        kwargs = self._viewed(kwargs)
        out = super().__call__(**kwargs)
        unwrap = (lambda a: a.obj if isinstance(a, _View) else a)
        return tuple(map(unwrap, out)) if isinstance(out, tuple) else unwrap(out)

    def _viewed(self, kwargs):
        """`kwargs` with other libraries' device arrays seen through a _View (the last call's view of the
        same object again, so that a repeated call is one)."""
        if all(type(v) in _OWN_TYPES for v in kwargs.values()):
            return kwargs
        last, views = self._views, {}
        for name, v in kwargs.items():
            if type(v) not in _OWN_TYPES and hasattr(v, "__cuda_array_interface__"):
                view = last.get(name)
                views[name] = view if view is not None and view.obj is v else _View(v)
        self._views = views
        return {**kwargs, **views}


#: argument types a CUDA kernel takes as they are (anything else with __cuda_array_interface__ is viewed)
_OWN_TYPES = frozenset((DeviceArray, np.ndarray, int, float, bool, np.int64, np.int32))
