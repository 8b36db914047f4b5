"""Scheduling commands read back from the lines `Function.history()` prints.

A line is `target.method(arguments)` (a computation's or an array's command) or `method(arguments)`
(the function's own: `assume`, `dataflow`). Arguments are written as the history writes them: loop
names and computation names bare, numbers, `True`/`False`/`None`, quoted strings, lists `[a, b]`,
isl text (`{ s[i] -> [i] }`, `[N] -> { ... }`), a bounds dictionary `{y: (lo, hi)}`, and for
`store_in` an array new to the function, `Buffer(name, [extents], dtype)`, and an `index` of integer
expressions of the computation's variables; `root` is `ms.root`. Each line runs the command it names,
so every check a command makes applies; a line that cannot be read, or names something other than a
scheduling command, raises `ScheduleError` naming it.
"""
from __future__ import annotations

import ast
import inspect
import operator
import re

from .algorithm import Param
from .buffer import Buffer
from .errors import ScheduleError
from .expr import floormod, max_, min_
from .schedule import root

#: the scheduling commands a line may name: a computation's or an array's, and the function's own
COMMANDS = frozenset({
    "split", "interchange", "reorder", "tile", "shift", "skew", "reverse", "set_schedule", "vectorize", "unroll",
    "parallelize", "gpu", "gpu_tile", "gpu_constant", "distribute", "pipeline", "after", "before", "then",
    "compute_at", "store_root", "store_at", "inline", "cache_shared", "cache_read", "send_receive", "store_in",
    "partition", "storage_fold", "expand"})
FUNCTION_COMMANDS = frozenset({"assume", "dataflow"})
#: commands whose first argument names another computation or an array (by its name on the line)
_RELATIVE = ("after", "before", "then", "compute_at", "cache_shared", "cache_read", "send_receive", "store_in")
_LINE = re.compile(r"^\s*(?:(?P<target>[A-Za-z_]\w*)\.)?(?P<method>[A-Za-z_]\w*)\((?P<args>.*)\)\s*$", re.S)
_KEYWORD = re.compile(r"^([A-Za-z_]\w*)=(?!=)(.*)$", re.S)


def replay(function, lines) -> None:
    """Apply each of `lines` (as `function.history()` prints them) to `function`, in order."""
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            raise ScheduleError(f"replay: {line!r} is not a command line `name.command(arguments)`")
        target = _target(function, match["target"], line) if match["target"] else function
        allowed = COMMANDS if match["target"] else FUNCTION_COMMANDS
        method = getattr(target, match["method"], None) if match["method"] in allowed else None
        if not callable(method):
            raise ScheduleError(f"replay: {line!r}: {match['target'] or function.name} has no command "
                                f"{match['method']!r}")
        positional, keywords = [], {}
        for k, text in enumerate(_split(match["args"], line)):
            keyword = _KEYWORD.match(text) if not text.startswith(("{", "[")) else None
            if keyword and match["method"] == "store_in" and keyword[1] == "index":
                keywords["index"] = _index(target, keyword[2].strip(), line)
            elif keyword:
                keywords[keyword[1]] = _value(function, keyword[2].strip(), line)
            elif k == 0 and match["method"] == "store_in" and text.startswith("Buffer("):
                positional.append(_buffer(function, text, line))
            elif k == 0 and match["method"] in _RELATIVE:
                positional.append(_target(function, text, line))
            elif k == 0 and match["method"] == "set_schedule":
                positional.append(text)     # isl text, as given
            else:
                positional.append(_value(function, text, line))
        try:    # (the arguments' number and names; a command's own errors are its own)
            inspect.signature(method).bind(*positional, **keywords)
        except TypeError as err:
            raise ScheduleError(f"replay: {line!r}: {err}") from None
        method(*positional, **keywords)


def _target(function, name, line):
    for thing in function.computations + function.buffers + function.inputs:
        if thing.name == name:
            return thing
    hint = (" (an array new to the function is written `Buffer(name, [extents], dtype)`, as history() "
            "prints it)" if ".store_in(" in line else "")
    raise ScheduleError(f"replay: {line!r}: function {function.name} has no computation or array {name!r}{hint}")


def _index(comp, text, line):
    """store_in's index, `[e, ...]`: integer expressions of the storage owner's variables."""
    owner = comp.storage_owner
    if not (text.startswith("[") and text.endswith("]")):
        raise ScheduleError(f"replay: {line!r}: the index must be a list `[e, ...]`")
    return [_expr(t, {v.name: v for v in owner.vars}, line) for t in _split(text[1:-1], line)]


def _buffer(function, text, line):
    """A new array `Buffer(name, [extents], dtype)`, its extents expressions of the sizes."""
    parts = _split(text[len("Buffer("):-1], line)
    if len(parts) != 3 or not (parts[1].startswith("[") and parts[1].endswith("]")):
        raise ScheduleError(f"replay: {line!r}: cannot read {text!r} as Buffer(name, [extents], dtype)")
    sizes = {p: Param(p) for p in function.param_names}
    extents = [_expr(e, sizes, line) for e in _split(parts[1][1:-1], line)]
    try:
        return Buffer(parts[0], extents, parts[2])
    except (TypeError, ValueError) as err:
        raise ScheduleError(f"replay: {line!r}: {err}") from None


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
_CALLS = {"floormod": floormod, "min": min_, "max": max_}


def _expr(text, names, line):
    """An integer expression as the history prints it (`(x // 8)`, `floormod(x, 8)`, `min(a, b)`), its
    names those of `names`."""
    def build(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](build(node.left), build(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -build(node.operand)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS \
                and len(node.args) == 2 and not node.keywords:
            return _CALLS[node.func.id](*(build(a) for a in node.args))
        raise ScheduleError(f"replay: {line!r}: cannot read {ast.unparse(node)!r} in the expression {text!r} "
                            f"(integers, {', '.join(sorted(names))}, + - * //, floormod, min, max)")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ScheduleError(f"replay: {line!r}: cannot read the expression {text!r}") from None
    return build(tree.body)


def _split(text, line) -> list:
    """The top-level comma-separated parts of `text` (commas inside brackets and quotes stay)."""
    parts, depth, quote, start = [], 0, None, 0
    for k, ch in enumerate(text):
        if quote:
            quote = None if ch == quote and text[k - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                raise ScheduleError(f"replay: {line!r}: unbalanced brackets")
        elif ch == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    if depth or quote:
        raise ScheduleError(f"replay: {line!r}: unbalanced brackets or quotes")
    last = text[start:].strip()
    return parts + [last] if last or parts else parts


def _value(function, text, line):
    """A Python value for an argument written as the history writes it."""
    if text in ("True", "False", "None") or re.fullmatch(r"-?\d+", text) or text[:1] in "'\"":
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise ScheduleError(f"replay: {line!r}: cannot read the argument {text!r}") from None
    if text == "root":
        return root
    if re.fullmatch(r"[A-Za-z_]\w*", text):
        return text                         # a loop's name
    if "->" in text:
        return text                         # isl text
    if text.startswith("[") and text.endswith("]"):
        return [_value(function, part, line) for part in _split(text[1:-1], line)]
    if text.startswith("(") and text.endswith(")"):
        return tuple(_value(function, part, line) for part in _split(text[1:-1], line))
    if text.startswith("{") and text.endswith("}"):
        out = {}
        for part in _split(text[1:-1], line):
            key, sep, value = part.partition(":")
            if not sep:
                raise ScheduleError(f"replay: {line!r}: cannot read {part!r} as `name: value`")
            out[key.strip()] = _value(function, value.strip(), line)
        return out
    raise ScheduleError(f"replay: {line!r}: cannot read the argument {text!r}")
