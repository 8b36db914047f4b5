"""Target "opencl": OpenCL C kernels built and launched with pyopencl (PoCL runs them on the CPU).

Floats: OpenCL C's `+ - * /` and `sqrt` are correctly rounded with the build
option -cl-fp32-correctly-rounded-divide-sqrt (always given), so with
fp_contract=False (`#pragma OPENCL FP_CONTRACT OFF`) results are numpy's bit for
bit; `exp log sin cos tan tanh pow atan2` are the OpenCL library's (PoCL's),
which may differ from glibc's by an ulp or two.
"""
from __future__ import annotations

import functools

import numpy as np

from mascarpone.middleend.errors import ArgumentError, NotSupportedError, TargetError
from mascarpone.middleend.types import DType

from .host import BufferPool, DeviceAdapter, GPUKernel, Profile, check_block_size
from .printer import GPUDialect

#: OpenCL C's names of the element types (bool elements are 0/1 bytes)
CL_TYPES = {"int8": "char", "int16": "short", "int32": "int", "int64": "long", "uint8": "uchar",
            "uint16": "ushort", "uint32": "uint", "uint64": "ulong", "float32": "float", "float64": "double",
            "bool": "uchar"}

INSTALL = ("apt-get install pocl-opencl-icd ocl-icd-opencl-dev (or another vendor's OpenCL driver) and "
           "pip install pyopencl; `make .venv/.installed` does both")


class OpenCLDialect(GPUDialect):
    name = "opencl"
    helper_qualifier = "static inline"
    kernel_qualifier = "__kernel"

    def includes(self):
        lines = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"]
        # the C99 names the shared printer and helpers use
        for c, cl in (("int8_t", "char"), ("int16_t", "short"), ("int32_t", "int"), ("int64_t", "long"),
                      ("uint8_t", "uchar"), ("uint16_t", "ushort"), ("uint32_t", "uint"), ("uint64_t", "ulong")):
            lines.append(f"typedef {cl} {c};")
        return lines

    def int_literal(self, value, dt):
        if -(1 << 31) < value < (1 << 31):
            return str(value)
        if value == -(1 << 63):
            return "(-9223372036854775807L - 1)"
        return f"{value}UL" if value >= (1 << 63) else f"{value}L"

    def math_call(self, fn, dt, args):
        from mascarpone.backends.c.dialect import MATH_NAMES
        return f"{MATH_NAMES[fn]}({', '.join(args)})"    # overloaded on float and double

    def bits_body(self, src: DType, dst: DType) -> str:
        return f"    return as_{CL_TYPES[dst.name]}(x);\n"

    def group_id(self, dim):
        return f"get_group_id({dim})"

    def local_id(self, dim):
        return f"get_local_id({dim})"

    def num_groups(self, dim):
        return f"get_num_groups({dim})"

    def local_size(self, dim):
        return f"get_local_size({dim})"

    def barrier(self):
        return "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

    def pointer_arg(self, memory, ctype, ident, const):
        if memory == "constant":
            return f"__constant {ctype} *restrict {ident}"
        return f"__global {'const ' if const else ''}{ctype} *restrict {ident}"

    def global_pointer(self, ctype):
        return f"__global {ctype} *"

    def shared_array(self, ctype, ident, count):
        return f"__local {ctype} {ident}[{count}];"


# the runtime --------------------------------------------------------------------------------------
def missing() -> str | None:
    """What this machine lacks to run OpenCL kernels, or None."""
    try:
        import pyopencl as cl
    except ImportError:
        return "the pyopencl package"
    try:
        platforms = cl.get_platforms()
    except Exception:   # pyopencl raises its own error when the ICD loader finds no platform
        platforms = []
    if not any(p.get_devices() for p in platforms):
        return "an OpenCL platform with a device (none found by the ICD loader)"
    return None


@functools.lru_cache(maxsize=None)
def default_runtime():
    """The runtime on the first OpenCL device ($PYOPENCL_CTX picks another)."""
    lack = missing()
    if lack:
        raise TargetError(f"target 'opencl' cannot run here: it needs {lack}; install it with: {INSTALL}")
    import pyopencl as cl
    return OpenCLRuntime(cl.create_some_context(interactive=False))


class OpenCLRuntime(DeviceAdapter, BufferPool):
    """One context and in-order queue with profiling; buffers, copies and launches of pyopencl."""

    def __init__(self, context):
        import pyopencl as cl
        import pyopencl.array as cla
        self.cl, self.cla = cl, cla
        self.context = context
        self.device = context.devices[0]
        # on a CPU device (PoCL) the 32-bit variant's sign extensions slowed blur's kernel by 1.6x
        self.narrow_indices = not self.device.type & cl.device_type.CPU
        self.queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
        self.events = []
        self._init_pool()

    # as the binder's device adapter -------------------------------------------------------------
    def ready(self):
        return self

    def owns(self, a):
        return isinstance(a, self.cla.Array)

    def check(self, name, a, output):
        if not a.flags.c_contiguous:
            raise ArgumentError(f"{name}: a device array must be C-contiguous")
        if a.context != self.context:
            raise ArgumentError(f"{name}: the device array belongs to another OpenCL context")

    def empty(self, shape, dtype, zero):
        a = self.cla.empty(self.queue, shape, dtype)
        if zero:
            self.zero(a)
        return a

    def zero(self, a):
        if a.nbytes:
            self.events.append(("upload", "zero", self.cl.enqueue_fill_buffer(self.queue, a.base_data,
                                                                                 np.uint8(0), a.offset, a.nbytes)))

    def handle_of(self, a):
        if a.offset:
            return a.base_data.get_sub_region(a.offset, max(a.nbytes, 1))
        return a.base_data

    # a call -------------------------------------------------------------------------------------------
    def begin(self):
        self.events = []
        self.pool = {}

    def _new_buffer(self, nbytes):
        return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, nbytes)

    def upload(self, handle, array, name):
        if array.nbytes:
            self.events.append(("upload", name, self.cl.enqueue_copy(self.queue, handle, array,
                                                                     is_blocking=False)))

    def download(self, array, handle, name):
        if array.nbytes:
            self.events.append(("download", name, self.cl.enqueue_copy(self.queue, array, handle,
                                                                       is_blocking=False)))

    def prepare(self, arguments, handles):
        """Check that the inputs in constant memory fit the device's; `arguments`: (buffer, array) pairs."""
        limit = self.device.max_constant_buffer_size
        for buf, a in arguments:
            if buf.memory == "constant" and a.nbytes > limit:
                raise ArgumentError(f"{buf.name}: {a.nbytes} bytes in constant memory; the device has {limit}")

    def check_block(self, name, block):
        check_block_size(name, block, self.device.max_work_group_size, self.device.max_work_item_sizes)

    def launch(self, k, grid, block, args):
        kernel = k.handle
        # the arguments are set again only when they changed since the kernel's last launch (a repeated call
        # changes none; a host loop, its variable): with the scalars' types declared (`declare_arguments`),
        # setting them all costs a few microseconds
        if args != k.last_args:
            kernel.set_args(*args)
            k.last_args = args
        global_size = tuple(g * b for g, b in zip(grid, block))
        self.events.append(("kernel", k.spec.name,
                            self.cl.enqueue_nd_range_kernel(self.queue, kernel, global_size, block)))

    def finish(self):
        self.queue.finish()

    @staticmethod
    def declare_arguments(k):
        """Declare the types of `k`'s scalar arguments (int64 sizes) to pyopencl: without them it finds
        each scalar's type anew at every setting, some 20 microseconds an argument."""
        k.handle.set_scalar_arg_dtypes([None] * len(k.buffers) + [np.int64] * len(k.scalars)
                                       + [None] * len(k.scratch))

    def end(self):
        """The Profile of the call's events, read when first asked for."""
        events, self.events = self.events, []
        self._release()

        def times():
            for kind, name, ev in events:
                try:
                    yield kind, name, (ev.profile.end - ev.profile.start) * 1e-6
                except Exception:   # an event that did not run (the call failed before it)
                    continue
        return Profile(pending=times)

    def build(self, source, options, what):
        cl = self.cl
        try:
            return cl.Program(self.context, source).build(options=options)
        except cl.RuntimeError as err:
            raise NotSupportedError(f"{what}: the OpenCL compiler failed on the generated code:\n"
                                    + "\n".join(str(err).splitlines()[:30])) from None


class OpenCLKernel(GPUKernel):
    """A kernel of the "opencl" target; `source("opencl")` is its OpenCL C."""

    target = "opencl"

    def source(self, kind="opencl"):
        """The generated code: 'opencl'."""
        if kind == "opencl":
            return self._source
        raise ValueError(f"unknown source kind {kind!r} for an OpenCL kernel; use 'opencl'")


def constant_limits(runtime, lowered):
    """Refuse, at compile time, more constant inputs than the device takes."""
    constants = [b for b in lowered.inputs if b.memory == "constant"]
    if len(constants) > runtime.device.max_constant_args:
        raise TargetError(f"{lowered.name}: {len(constants)} inputs in constant memory; the device takes at "
                          f"most {runtime.device.max_constant_args}")
