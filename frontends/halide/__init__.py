"""The Halide front-end: a pipeline serialized by the halide wheel becomes an ms.Function.

    f = from_halide(pipeline_or_func_or_bytes)
    k = f.compile("cpu")
    out = k.realize([width, height], input=array)

Modules: schema (the serialized format's layout), reader (checked decoding),
pipeline (Funcs, call graph, unsupported features), exprs (expressions),
bounds (isl bounds inference), builder (inputs and computations), schedule
(Halide schedules as commands), kernel (the `realize` convention).
"""
from __future__ import annotations

from mascarpone.middleend.algorithm import current_function
from mascarpone.middleend.autoschedule.state import save

from .builder import PipelineTranslation
from .errors import HalideFormatError, HalideVersionError
from .kernel import HalideFunction, HalideKernel
from .names import sanitize
from .reader import read_pipeline
from .schedule import apply_loop_schedules, apply_placements, vectorize_reductions


def serialize(pipeline_or_func) -> bytes:
    """The bytes of `hl.serialize_pipeline` for a Pipeline, a Func (or a list of Funcs), or bytes as they are."""
    if isinstance(pipeline_or_func, (bytes, bytearray, memoryview)):
        return bytes(pipeline_or_func)
    import halide as hl
    p = pipeline_or_func
    if isinstance(p, hl.Func) or isinstance(p, (list, tuple)):
        p = hl.Pipeline(p)
    if not isinstance(p, hl.Pipeline):
        raise HalideFormatError(f"from_halide expects an hl.Pipeline, an hl.Func, a list of Funcs or serialized "
                                f"bytes, got {type(pipeline_or_func).__name__}")
    return hl.serialize_pipeline(p)


def from_halide(pipeline_or_func, name=None, output_mins=None) -> HalideFunction:
    """Translate a Halide pipeline (algorithm and schedule) into an ms.Function.

    Accepts an hl.Pipeline, an hl.Func, a list of output Funcs, or the bytes of
    `hl.serialize_pipeline`. Unsupported features raise ms.NotSupportedError
    naming the Func; unreadable bytes raise HalideFormatError. `output_mins`
    ({output index: [min per dimension]}) computes the outputs over regions that
    start there instead of 0 (the kernel makes such translations itself when
    realizing into buffers with a nonzero min).
    """
    data = serialize(pipeline_or_func)
    tr = PipelineTranslation(read_pipeline(data), output_mins)
    tr.data = data
    tr.infer_bounds()
    fname = sanitize(name or tr.outputs[0].name)
    if current_function(required=False) is not None:
        raise HalideFormatError("call from_halide outside of a `with ms.Function(...)` block")
    with HalideFunction(fname) as f:
        tr.function = f
        tr.declare_inputs()
        tr.declare_computations()
    f.translation = tr
    if tr.steady is not None and tr.context().is_subset(tr.steady):
        tr.steady = None   # every size is in the steady regime: no general code (see HalideFunction.compile)
    context = tr.context()
    apply_loop_schedules(tr, context)
    vectorize_reductions(tr)
    apply_placements(tr, context)
    tr.before_default_inlines = save(f)
    for comp in tr.default_inlines:
        comp.inline()
    tr.commands = len(f.history())
    return f


__all__ = ["from_halide", "HalideFunction", "HalideKernel", "HalideFormatError", "HalideVersionError"]
