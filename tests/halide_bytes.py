"""Test helper: a decoded pipeline (reader.Node tree) written back to FlatBuffer bytes.

Tests of hostile input decode real `hl.serialize_pipeline` bytes, change a field
of the tree (a name, an index, a type, a factor) and encode it again, so the
bytes are what a corrupted or hostile writer would give the front-end.
"""
import flatbuffers

from mascarpone.frontends.halide.reader import Node
from mascarpone.frontends.halide.schema import EXPR_KINDS, STMT_KINDS, TABLES

_SCALAR_SLOT = {
    "bool": "PrependBoolSlot", "int8": "PrependInt8Slot", "uint8": "PrependUint8Slot",
    "int32": "PrependInt32Slot", "int64": "PrependInt64Slot", "uint64": "PrependUint64Slot",
    "float64": "PrependFloat64Slot",
}
_SCALAR = {"bool": ("PrependBool", 1), "int8": ("PrependInt8", 1), "uint8": ("PrependUint8", 1),
           "int32": ("PrependInt32", 4), "int64": ("PrependInt64", 8), "uint64": ("PrependUint64", 8),
           "float64": ("PrependFloat64", 8)}


def _width(kind):
    return 2 if kind in ("Expr", "[Expr]", "[Stmt]") else 1


def encode(pipeline: Node) -> bytes:
    """FlatBuffer bytes of a Pipeline Node (the inverse of reader.read_pipeline)."""
    b = flatbuffers.Builder(1024)
    b.Finish(_table(b, pipeline, "Pipeline"))
    return bytes(b.Output())


def _union_tag(node, kinds):
    return 0 if node is None else kinds.index(node.kind) + 1


def _table(b, node, name):
    fields = TABLES[name]
    # children first: FlatBuffers builds bottom-up, offsets must exist before the table starts
    made = {}
    for field, kind in fields:
        value = getattr(node, field, None)
        if value is None or kind in _SCALAR_SLOT:
            continue
        if kind == "str":
            made[field] = b.CreateString(value)
        elif kind == "bytes":
            made[field] = b.CreateByteVector(bytes(value))
        elif kind == "Expr":
            made[field] = _table(b, value, value.kind)
        elif kind in ("[Expr]", "[Stmt]"):
            made[field] = _union_vectors(b, value, EXPR_KINDS if kind == "[Expr]" else STMT_KINDS)
        elif kind.startswith("["):
            made[field] = _vector(b, value, kind[1:-1])
        else:
            made[field] = _table(b, value, kind)
    b.StartObject(sum(_width(k) for _, k in fields))
    slot = 0
    for field, kind in fields:
        value = getattr(node, field, None)
        if kind in _SCALAR_SLOT and value is not None:
            getattr(b, _SCALAR_SLOT[kind])(slot, value, not value)   # (a value equal to the default is left out)
        elif kind == "Expr" and field in made:
            b.PrependUint8Slot(slot, _union_tag(value, EXPR_KINDS), 0)
            b.PrependUOffsetTRelativeSlot(slot + 1, made[field], 0)
        elif kind in ("[Expr]", "[Stmt]") and field in made:
            types, values = made[field]
            b.PrependUOffsetTRelativeSlot(slot, types, 0)
            b.PrependUOffsetTRelativeSlot(slot + 1, values, 0)
        elif field in made:
            b.PrependUOffsetTRelativeSlot(slot, made[field], 0)
        slot += _width(kind)
    return b.EndObject()


def _vector(b, items, inner):
    if inner in _SCALAR:
        method, width = _SCALAR[inner]
        b.StartVector(width, len(items), width)
        for v in reversed(items):
            getattr(b, method)(v)
        return b.EndVector()
    offsets = [b.CreateString(v) if inner == "str" else _table(b, v, inner) for v in items]
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _union_vectors(b, items, kinds):
    # (a missing element keeps tag 0, NONE, over an empty table)
    offsets = [_table(b, Node("UndefinedExpr", {}), "UndefinedExpr") if v is None else _table(b, v, v.kind)
               for v in items]
    b.StartVector(1, len(items), 1)
    for v in reversed(items):
        b.PrependUint8(_union_tag(v, kinds))
    types = b.EndVector()
    b.StartVector(4, len(items), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return types, b.EndVector()
