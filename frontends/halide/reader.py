"""Decoding serialized Halide pipelines into plain Python objects.

Built on the `flatbuffers` package's low-level `Table`; every offset and
length is checked against the buffer first, so truncated or corrupted bytes
raise `HalideFormatError` instead of reading garbage or crashing.
"""
from __future__ import annotations

import struct

from flatbuffers import encode
from flatbuffers import number_types as N
from flatbuffers.table import Table

from .errors import HalideFormatError, HalideVersionError
from .schema import DEFAULTS, EXPR_KINDS, STMT_KINDS, SUPPORTED_VERSIONS, TABLES

_SCALARS = {
    "bool": (N.BoolFlags, False), "int8": (N.Int8Flags, 0), "uint8": (N.Uint8Flags, 0),
    "int32": (N.Int32Flags, 0), "int64": (N.Int64Flags, 0), "uint64": (N.Uint64Flags, 0),
    "float64": (N.Float64Flags, 0.0),
}
_MAX_DEPTH = 2000   # nesting deeper than any real pipeline: a cycle of offsets in corrupted bytes


class Node:
    """A decoded table: `kind` is its table name, fields are attributes."""

    __slots__ = ("kind", "__dict__")

    def __init__(self, kind, fields):
        self.kind = kind
        self.__dict__.update(fields)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if v not in (None, [], 0, False, ""))
        return f"{self.kind}({inner})"


def _slot_count(kind):
    return 2 if kind in ("Expr", "[Expr]", "[Stmt]") else 1


class _Decoder:
    def __init__(self, data: bytes):
        self.buf = bytes(data)
        self.size = len(self.buf)
        self.depth = 0

    # checked primitive reads -------------------------------------------------------
    def _check(self, off, width, what):
        if off < 0 or off + width > self.size:
            raise HalideFormatError(f"the pipeline bytes are truncated or corrupted: {what} at offset {off} "
                                    f"lies outside the {self.size} bytes")

    def get(self, flags, off, what="a value"):
        self._check(off, flags.bytewidth, what)
        return flags.py_type(encode.Get(flags.packer_type, self.buf, off))

    def table_at(self, pos, name):
        self._check(pos, 4, f"table {name}")
        vtable = pos - self.get(N.SOffsetTFlags, pos, f"the vtable of {name}")
        self._check(vtable, 4, f"the vtable of {name}")
        vt_len = self.get(N.VOffsetTFlags, vtable)
        obj_len = self.get(N.VOffsetTFlags, vtable + 2)
        self._check(vtable, vt_len, f"the vtable of {name}")
        self._check(pos, obj_len, f"table {name}")
        return Table(self.buf, pos)

    def field_offset(self, table, slot):
        vtable = table.Pos - self.get(N.SOffsetTFlags, table.Pos)
        if slot < self.get(N.VOffsetTFlags, vtable):
            return self.get(N.VOffsetTFlags, vtable + slot)
        return 0

    def indirect(self, off, what):
        return off + self.get(N.UOffsetTFlags, off, what)

    def string_at(self, off, what):
        start = self.indirect(off, what)
        length = self.get(N.UOffsetTFlags, start, what)
        self._check(start + 4, length, what)
        raw = self.buf[start + 4:start + 4 + length]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise HalideFormatError(f"the pipeline bytes are corrupted: {what} is not UTF-8 text") from None

    def vector_at(self, off, elem_width, what):
        start = self.indirect(off, what)
        length = self.get(N.UOffsetTFlags, start, what)
        self._check(start + 4, length * elem_width, what)
        return start + 4, length

    # tables --------------------------------------------------------------------------
    def decode(self, pos, name):
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise HalideFormatError("the pipeline bytes are corrupted: tables nest without end")
        try:
            table = self.table_at(pos, name)
            fields, slot = {}, 0
            for field, kind in TABLES[name]:
                fields[field] = self.field(table, slot, kind, f"{name}.{field}")
                slot += _slot_count(kind)
            return Node(name, fields)
        finally:
            self.depth -= 1

    def field(self, table, slot, kind, what):
        base = 4 + 2 * slot
        if kind in ("Expr", "[Expr]", "[Stmt]"):
            type_off = self.field_offset(table, base)
            value_off = self.field_offset(table, base + 2)
            if kind == "Expr":
                if not value_off:
                    return None
                tag = self.get(N.Uint8Flags, table.Pos + type_off, what) if type_off else 0
                return self.union_value(tag, table.Pos + value_off, what)
            if not value_off:
                return []
            start, n = self.vector_at(table.Pos + value_off, 4, what)
            tstart, tn = self.vector_at(table.Pos + type_off, 1, what) if type_off else (0, 0)
            if tn != n:
                raise HalideFormatError(f"the pipeline bytes are corrupted: {what} has {n} values but {tn} types")
            read = self.union_value if kind == "[Expr]" else self.statement
            return [read(self.get(N.Uint8Flags, tstart + i), start + 4 * i, what) for i in range(n)]
        off = self.field_offset(table, base)
        if kind in _SCALARS:
            flags, default = _SCALARS[kind]
            return self.get(flags, table.Pos + off, what) if off else default
        if not off:
            return DEFAULTS.get((table_name_of(what), what.split(".")[-1]), [] if kind.startswith("[") else
                                (b"" if kind == "bytes" else None))
        at = table.Pos + off
        if kind == "str":
            return self.string_at(at, what)
        if kind == "bytes":
            start, n = self.vector_at(at, 1, what)
            return self.buf[start:start + n]
        if kind.startswith("["):
            inner = kind[1:-1]
            if inner in _SCALARS:
                flags, _ = _SCALARS[inner]
                start, n = self.vector_at(at, flags.bytewidth, what)
                return [self.get(flags, start + i * flags.bytewidth) for i in range(n)]
            start, n = self.vector_at(at, 4, what)
            if inner == "str":
                return [self.string_at(start + 4 * i, what) for i in range(n)]
            return [self.decode(self.indirect(start + 4 * i, what), inner) for i in range(n)]
        return self.decode(self.indirect(at, what), kind)

    def statement(self, tag, off, what):
        """An AssertStmt (what requirements are) decoded, any other statement as a Node naming its kind."""
        if not 1 <= tag <= len(STMT_KINDS):
            raise HalideFormatError(f"the pipeline bytes are corrupted: {what} has an unknown statement kind {tag}")
        kind = STMT_KINDS[tag - 1]
        if kind == "AssertStmt":
            return self.decode(self.indirect(off, what), kind)
        return Node(kind, {})

    def union_value(self, tag, off, what):
        if tag == 0:
            return None
        if tag > len(EXPR_KINDS):
            raise HalideFormatError(f"the pipeline bytes are corrupted: {what} has an unknown expression kind {tag}")
        return self.decode(self.indirect(off, what), EXPR_KINDS[tag - 1])


def table_name_of(what):
    return what.split(".")[0]


def _root(decoder):
    if decoder.size < 8:
        raise HalideFormatError(f"{decoder.size} bytes are too few to be a serialized Halide pipeline")
    return decoder.get(N.UOffsetTFlags, 0, "the root offset")


def serialization_version(data: bytes) -> str:
    """The serialization version string a pipeline's bytes carry (field 9 of Pipeline)."""
    d = _Decoder(data)
    try:
        table = d.table_at(_root(d), "Pipeline")
        slot = 0
        for field, kind in TABLES["Pipeline"]:
            if field == "serialization_version":
                break
            slot += _slot_count(kind)
        off = d.field_offset(table, 4 + 2 * slot)
        return d.string_at(table.Pos + off, "Pipeline.serialization_version") if off else ""
    except (struct.error, IndexError, OverflowError, TypeError) as err:
        raise HalideFormatError(f"the pipeline bytes are truncated or corrupted ({err})") from None


def read_pipeline(data) -> Node:
    """Decode the bytes of `hl.serialize_pipeline(p)` into a tree of Nodes (checking the version first)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise HalideFormatError(f"expected the bytes of a serialized Halide pipeline, got {type(data).__name__}")
    version = serialization_version(data)
    if version not in SUPPORTED_VERSIONS:
        raise HalideVersionError(
            f"this pipeline was serialized with format version {version or '(none)'!r}; the Halide front-end "
            f"reads version(s) {', '.join(SUPPORTED_VERSIONS)} (the halide 21.x wheel)")
    d = _Decoder(data)
    try:
        return d.decode(_root(d), "Pipeline")
    except RecursionError:
        raise HalideFormatError("the pipeline bytes are corrupted: tables nest without end") from None
    except (struct.error, IndexError, OverflowError, TypeError) as err:
        raise HalideFormatError(f"the pipeline bytes are truncated or corrupted ({err})") from None
