"""A pipeline's requirements (`Pipeline.add_requirement`) and the constraints on its output buffers
(`Func.output_buffer().dim(d).set_bounds/set_stride`): conditions on its Params, checked on each call.

Halide checks them before computing anything and fails the call with the
message given; the kernel does the same (ArgumentError).
"""
from __future__ import annotations

import mascarpone.middleend.expr as E
from mascarpone.middleend.errors import ArgumentError, NotSupportedError

from .errors import HalideFormatError
from .exprs import Translator
from .pipeline import walk_nodes
from .scalars import evaluate


def scalar_key(name):
    """The name a scalar Param's value has when requirements are evaluated."""
    return f"param {name}"


class Requirement:
    """One condition, the Params it reads and the message Halide prints when it fails: texts and
    expressions of the Params, whose values are printed."""

    def __init__(self, condition, message, params):
        self.condition, self.message, self.params = condition, message, params

    def check(self, env):
        """Raise ArgumentError when the condition is false for the values in `env`."""
        if not evaluate(self.condition, env):
            text = "".join(part if isinstance(part, str) else str(evaluate(part, env)) for part in self.message)
            raise ArgumentError(f"a requirement of the pipeline failed: {text.strip() or E.pseudo_c(self.condition)}")


class _ParamScope:
    """Names in a requirement: Params and ImageParam sizes only (Halide refuses Vars and Funcs there)."""

    def __init__(self, tr):
        self.tr = tr
        self.params = set()

    def var(self, name, dtype):
        raise HalideFormatError(f"a requirement of the pipeline uses the variable {name}; requirements may use "
                                f"only Params and ImageParam sizes")

    def param(self, node, dtype):
        tr = self.tr
        if node.name in tr.scalar_params and node.param_name == node.name:
            self.params.add(node.name)
            return E.Sym(scalar_key(node.name), tr.scalar_params[node.name].dtype)
        value = tr.param_value(node, dtype, final=True)
        if any(isinstance(n, E.Access) for n in E.walk(value)):
            raise NotSupportedError(f"a requirement of the pipeline reads {node.name}, which is not supported")
        return value

    def func_call(self, node, args):
        raise HalideFormatError(f"a requirement of the pipeline calls the Func {node.name}; requirements may use "
                                f"only Params and ImageParam sizes")

    image_call = func_call


def read_requirements(tr, statements):
    """The Requirements of the decoded `statements` (AssertStmts) of a pipeline."""
    out = []
    for k, s in enumerate(statements):
        if s is None or s.kind != "AssertStmt":
            raise HalideFormatError(f"requirement {k} of the pipeline is a {getattr(s, 'kind', 'missing')} "
                                    f"statement; Halide writes a requirement as an AssertStmt")
        scope = _ParamScope(tr)
        translate = Translator(scope, f"requirement {k} of the pipeline")
        condition = translate(s.condition)
        if not condition.dtype.is_bool:
            raise HalideFormatError(f"requirement {k} of the pipeline is a {condition.dtype} value, not a condition")
        out.append(Requirement(condition, _message(s.message, translate), sorted(scope.params)))
    return out


def _message(node, translate):
    """The parts of a requirement's message: Halide's is `halide_error_requirement_failed(stringify(
    condition), stringify(the user's arguments))`; strings stay text, expressions are printed."""
    args = node.args if node is not None and node.kind == "Call" else []
    user = args[1] if len(args) == 2 and args[1] is not None and args[1].kind == "Call" else None
    if user is None:
        return [n.value for n in walk_nodes(node) if n.kind == "StringImm"]
    return [a.value if a is not None and a.kind == "StringImm" else translate(a) for a in user.args]


def read_output_constraints(tr):
    """{output Func index: [(dimension, "min" | "extent" | "stride", expression of the Params)]}: what
    the pipeline requires of each output's buffer (the stride of dimension 0 is 1 unless said)."""
    by_name = {p.name: p for p in tr.pipe.parameters if p is not None and p.is_buffer}
    out = {}
    for o in tr.outputs:
        param = by_name.get(o.name)
        found = []
        for d, c in enumerate(param.buffer_constraints[:o.ndim] if param is not None else []):
            if c is None:
                continue
            for attr in ("min", "extent", "stride"):
                node = getattr(c, attr)
                if node is None or node.kind == "UndefinedExpr":
                    continue
                scope = _ParamScope(tr)
                value = Translator(scope, f"the {attr} of dimension {d} of output {o.name}'s buffer")(node)
                if not value.dtype.is_int:
                    raise HalideFormatError(f"the {attr} of dimension {d} of output {o.name}'s buffer is a "
                                            f"{value.dtype} value")
                found.append((d, attr, value, sorted(scope.params)))
        out[o.index] = found
    return out


def check_output(name, constraints, env, mins, extents, strides):
    """Raise ArgumentError when an output's buffer (per dimension: min, extent, stride in elements,
    Halide's order) breaks a constraint of the pipeline."""
    actual = {"min": mins, "extent": extents, "stride": strides}
    for d, attr, value, _ in constraints:
        want = evaluate(value, env)
        if actual[attr][d] != want:
            raise ArgumentError(f"output {name}: its buffer must have {attr} {want} in dimension {d} (a "
                                f"constraint of the pipeline), got {actual[attr][d]}")
