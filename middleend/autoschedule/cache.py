"""The disk cache of chosen schedules: one JSON file per (function, sizes, target, machine), so a
second call applies the choice without measuring. The folder is $MASCARPONE_AUTOSCHEDULE_CACHE,
else ~/.cache/mascarpone/autoschedule."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from . import machine

ENV = "MASCARPONE_AUTOSCHEDULE_CACHE"
#: bumped when the meaning of a stored choice changes, so old entries are not misread
FORMAT = 1


def folder() -> Path:
    """Where the cache lives."""
    given = os.environ.get(ENV)
    return Path(given) if given else Path.home() / ".cache" / "mascarpone" / "autoschedule"


def fingerprint(function) -> str:
    """The printed algorithm and the schedule it starts from: inputs, computations with their domains
    and expressions, placements, commands already given."""
    lines = [f"function {function.name}"]
    lines += [f"input {i.name} {i.dtype} {[str(d) for d in i.shape]}" for i in function.inputs]
    for c in function.computations:
        lines.append(f"{c!r} over {c.domain} output={bool(c.is_output)}")
    lines += [f"assume {text}" for text, _ in function._assumptions]
    lines += [f"{how} {c.name} {o.name} {level}" for how, c, o, level in function._ordering]
    lines += function.history()
    return "\n".join(lines)


def key(function, sizes, target, seed, measured) -> str:
    """The cache key: a hash of the function's fingerprint, the sizes, the target, the machine,
    and how the choice was made."""
    text = json.dumps([FORMAT, fingerprint(function), sorted(sizes.items()), target, machine.fingerprint(),
                       seed, measured])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(k) -> dict | None:
    """The stored entry for key `k`, or None (a damaged file counts as none)."""
    path = folder() / f"{k}.json"
    try:
        entry = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and entry.get("format") == FORMAT else None


def store(k, entry: dict) -> None:
    """Write the entry for key `k` (atomically: a reader never sees half a file)."""
    d = folder()
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{k}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps({**entry, "format": FORMAT}, indent=1, sort_keys=True))
    os.replace(tmp, d / f"{k}.json")
