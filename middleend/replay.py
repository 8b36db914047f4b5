"""Scheduling commands read back from the lines `Function.history()` prints.

A line is `target.method(arguments)` (a computation's or an array's command) or `method(arguments)`
(the function's own: `assume`, `dataflow`). Arguments are written as the history writes them: loop
names and computation names bare, numbers, `True`/`False`/`None`, quoted strings, lists `[a, b]`,
isl text (`{ s[i] -> [i] }`, `[N] -> { ... }`) and a bounds dictionary `{y: (lo, hi)}`; `root` is
`ms.root`. Each line runs the command it names, so every check a command makes applies, and a line
that cannot be read raises `ScheduleError` naming it.
"""
from __future__ import annotations

import ast
import re

from .errors import ScheduleError
from .schedule import root

#: commands whose first argument names another computation or an array (by its name on the line)
_RELATIVE = ("after", "before", "then", "compute_at", "cache_read", "send_receive", "store_in")
_LINE = re.compile(r"^\s*(?:(?P<target>[A-Za-z_]\w*)\.)?(?P<method>[A-Za-z_]\w*)\((?P<args>.*)\)\s*$", re.S)
_KEYWORD = re.compile(r"^([A-Za-z_]\w*)=(?!=)(.*)$", re.S)


def replay(function, lines) -> None:
    """Apply each of `lines` (as `function.history()` prints them) to `function`, in order."""
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            raise ScheduleError(f"replay: {line!r} is not a command line `name.command(arguments)`")
        target = _target(function, match["target"], line) if match["target"] else function
        method = getattr(target, match["method"], None)
        if match["method"].startswith("_") or not callable(method):
            raise ScheduleError(f"replay: {line!r}: {match['target'] or function.name} has no command "
                                f"{match['method']!r}")
        positional, keywords = [], {}
        for k, text in enumerate(_split(match["args"], line)):
            keyword = _KEYWORD.match(text) if not text.startswith(("{", "[")) else None
            if keyword:
                keywords[keyword[1]] = _value(function, keyword[2].strip(), line)
            elif k == 0 and match["method"] in _RELATIVE:
                positional.append(_target(function, text, line))
            elif k == 0 and match["method"] == "set_schedule":
                positional.append(text)     # isl text, as given
            else:
                positional.append(_value(function, text, line))
        if match["method"] == "store_in" and "index" in keywords:
            keywords["index"] = _index(target, keywords["index"], line)
        method(*positional, **keywords)


def _target(function, name, line):
    for thing in function.computations + function.buffers + function.inputs:
        if thing.name == name:
            return thing
    hint = (": the line does not say the array's shape; create it (ms.Buffer), call store_in, and replay "
            "the lines after" if ".store_in(" in line else "")
    raise ScheduleError(f"replay: {line!r}: function {function.name} has no computation or array {name!r}{hint}")


def _index(comp, names, line):
    """store_in's index: the storage owner's variables, named."""
    owner = comp.storage_owner
    variables = {v.name: v for v in owner.vars}
    if not isinstance(names, list) or any(n not in variables for n in names):
        raise ScheduleError(f"replay: {line!r}: an index other than {owner.name}'s variables is not read back; "
                            f"call store_in with it, and replay the lines after")
    return [variables[n] for n in names]


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
        return ast.literal_eval(text)
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
