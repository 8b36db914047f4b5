"""Hostile or corrupted pipeline bytes: each raises HalideFormatError naming the Func, before translation.

The bytes are real `serialize_pipeline` output with one field changed (decoded,
changed, encoded again by halide_bytes.encode).
"""
import numpy as np
import pytest

import mascarpone as ms
from halide_bytes import encode
from mascarpone.frontends.halide.reader import Node, read_pipeline

hl = pytest.importorskip("halide")
x, y = hl.Var("x"), hl.Var("y")


def decoded(*outputs):
    return read_pipeline(hl.serialize_pipeline(hl.Pipeline(list(outputs))))


def func(pipe, name):
    """The Func of that name (Halide suffixes `$n` to names used before in the process)."""
    return next(f for f in pipe.funcs if f.name.split("$")[0] == name)


def calls(node, kind="Call"):
    """Every node of `kind` under `node`."""
    from mascarpone.frontends.halide.pipeline import walk_nodes
    return [n for n in walk_nodes(node) if n.kind == kind]


def two_stage():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    prod, cons = hl.Func("prod"), hl.Func("cons")
    prod[x, y] = inp[x, y] * 2
    cons[x, y] = prod[x, y] + prod[x + 1, y]
    return decoded(cons)


def refused(pipe, pattern, error=ms.HalideFormatError):
    """`pattern` with `~` standing for a Func name's `$n` suffix, if any."""
    with pytest.raises(error, match=pattern.replace("~", r"(\$\d+)?")):
        ms.from_halide(encode(pipe))


def test_round_trip_of_the_test_encoder_translates():
    k = ms.from_halide(encode(two_stage())).compile("cpu")
    img = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(k.realize([5, 4], inp=img), img[:, :5] * 2 + img[:, 1:6] * 2)


def test_a_func_without_a_name():
    pipe = two_stage()
    func(pipe, "prod").name = None
    refused(pipe, r"Func \d of the pipeline has no name")


def test_a_func_without_a_definition():
    pipe = two_stage()
    func(pipe, "prod").init_def = None
    refused(pipe, r"Func prod~ has no pure definition")


def test_a_pure_definition_with_a_condition():
    """Only an update's RDom carries a where clause; a false one on a pure definition is not Halide."""
    pipe = two_stage()
    func(pipe, "prod").init_def.predicate.value = 0
    refused(pipe, r"Func prod~: the pure definition has a condition")


@pytest.mark.parametrize("placed", ["at the root", "per row of its consumer"])
def test_an_rdom_of_no_points_runs_no_update_as_in_halide(placed):
    """The RDom's extent 3 changed to 0: the update runs no iteration, so the output keeps its pure
    definition, as Halide's realize of the same bytes gives (no crash, no refusal), also where the
    reduction is computed per row of a consumer (fuzzing seed 1134, case 1243, raised from isl)."""
    inp = hl.ImageParam(hl.Int(16), 1, "inp")
    r = hl.RDom([(0, 3)], "r")
    acc = hl.Func("acc")
    acc[x] = hl.i32(7)
    acc[x] += hl.i32(inp[x + r.x])
    if placed != "at the root":
        out = hl.Func("acc_rows")
        out[x, y] = acc[x] + y
        acc.compute_at(out, y)
        pipe = decoded(out)
        threes = [n for n in calls(pipe, "IntImm") if n.value == 3]
        for n in threes:
            n.value = 0
        data = encode(pipe)
        values = np.arange(8, dtype=np.int16)
        ours = ms.from_halide(data).compile("cpu").realize([4, 2], inp=values)
        inp.set(hl.Buffer(values))
        theirs = np.asarray(hl.deserialize_pipeline(data, {"inp": inp.parameter()}).realize([4, 2]))
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(ours, 7 + np.arange(2)[:, None] + np.zeros(4, np.int32))
        return
    pipe = decoded(acc)
    threes = [n for n in calls(pipe, "IntImm") if n.value == 3]
    assert threes
    for n in threes:
        n.value = 0
    data = encode(pipe)
    values = np.arange(8, dtype=np.int16)
    ours = ms.from_halide(data).compile("cpu").realize([4], inp=values)
    inp.set(hl.Buffer(values))
    theirs = np.asarray(hl.deserialize_pipeline(data, {"inp": inp.parameter()}).realize([4]))
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, np.full(4, 7, np.int32))


def test_an_output_listed_twice():
    pipe = two_stage()
    pipe.output_names = pipe.output_names * 2
    refused(pipe, r"lists Func cons~ twice among its outputs")


def test_an_input_no_definition_reads_any_more_still_realizes():
    """Without its update a histogram no longer reads its image: the image's sizes do not matter."""
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    r = hl.RDom([(0, inp.width())], "r")
    hist = hl.Func("hist")
    hist[x] = hl.u32(0)
    hist[hl.i32(inp[r.x]) % 4] += hl.u32(1)
    pipe = decoded(hist)
    func(pipe, "hist").updates = []
    k = ms.from_halide(encode(pipe)).compile("cpu")
    np.testing.assert_array_equal(k.realize([4], inp=np.arange(9, dtype=np.uint8)), np.zeros(4, np.uint32))


def test_a_definition_with_no_values():
    pipe = two_stage()
    func(pipe, "prod").init_def.values = []
    refused(pipe, r"Func prod~ defines 0 values for the 1 of its type")


def test_a_call_reads_a_tuple_element_that_does_not_exist():
    pipe = two_stage()
    calls(func(pipe, "cons").init_def.values)[0].value_index = 3
    refused(pipe, r"Func cons~: value 0 reads value 3 of prod~, which has 1")


def test_a_func_with_zero_arguments_called_with_two():
    pipe = two_stage()
    prod = func(pipe, "prod")
    prod.args, prod.init_def.args = [], []
    refused(pipe, r"Func cons~: value 0 calls prod~ with 2 arguments; it has 0")


def test_a_predicate_without_a_type():
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    acc = hl.Func("acc")
    r = hl.RDom([(0, 10)], "r")
    acc[x] = 0
    acc[x] += inp[x + r.x]
    pipe = decoded(acc)
    update = func(pipe, "acc").updates[0]
    assert update.predicate.kind == "UIntImm"   # the always-true predicate
    update.predicate.type = None
    refused(pipe, r"Func acc~ \(update 0\).*has no type")


def test_a_left_hand_side_that_repeats_a_variable():
    pipe = two_stage()
    prod = func(pipe, "prod")
    prod.args = ["x", "x"]
    refused(pipe, r"Func prod~ repeats the variable x on its left-hand side")


def test_an_update_that_repeats_a_pure_variable():
    acc = hl.Func("acc2")
    acc[x, y] = x + y
    acc[x, y] = acc[x, y] * 2
    pipe = decoded(acc)
    update = func(pipe, "acc2").updates[0]
    update.args = [update.args[0], update.args[0]]
    refused(pipe, r"Func acc2~ \(update 0\) repeats the variable x")


def test_a_split_factor_of_two_to_the_32():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    f = hl.Func("split_me")
    f[x, y] = inp[x, y]
    f.split(x, hl.Var("xo"), hl.Var("xi"), 8)
    pipe = decoded(f)
    func(pipe, "split_me").init_def.stage_schedule.splits[0].factor.value = 1 << 32
    refused(pipe, r"Func split_me~: .*4294967296")


@pytest.mark.parametrize("how", ["unroll", "vectorize"])
def test_unroll_and_vector_factors_beyond_the_limit(how):
    inp = hl.ImageParam(hl.Float(32), 1, "inp")
    f = hl.Func("wide_" + how)
    f[x] = inp[x] + 1
    getattr(f, how)(x, 1 << 20)
    # (Halide's deserializer may suffix a name taken in this process: wide_vectorize$1)
    with pytest.raises(ms.NotSupportedError, match=rf"wide_{how}(\$\d+)?: .* of 1048576 iterations; .* at most 256"):
        ms.from_halide(f)


def test_a_constant_outside_its_type():
    pipe = two_stage()
    consts = calls(func(pipe, "prod").init_def.values, "IntImm") + \
        calls(func(pipe, "prod").init_def.values, "FloatImm")
    node = consts[0]
    node.kind, node.__dict__["value"] = "IntImm", 1 << 40
    refused(pipe, r"Func prod~: .*1099511627776, outside its type")


def test_operands_of_different_types():
    pipe = two_stage()
    mul = calls(func(pipe, "prod").init_def.values, "Mul")[0]
    mul.b = Node("IntImm", {"value": 2, "type": Node("Type", {"code": 0, "bits": 32, "lanes": 1})})
    refused(pipe, r"Func prod~: value 0 .*Mul of a")


def test_a_call_to_a_func_index_out_of_range():
    pipe = two_stage()
    calls(func(pipe, "cons").init_def.values)[0].func_index = 99
    refused(pipe, r"Func cons~: .*Func index 99")


def test_an_image_with_the_wrong_number_of_indices():
    pipe = two_stage()
    image = [c for c in calls(func(pipe, "inp_im").init_def.values) if c.call_type == 0][0]
    image.args = image.args[:1]
    refused(pipe, r"Func inp_im~: .*reads inp with 1 indices")


def test_compute_at_a_func_the_pipeline_does_not_have():
    inp = hl.ImageParam(hl.Float(32), 2, "inp")
    prod, cons = hl.Func("prod3"), hl.Func("cons3")
    prod[x, y] = inp[x, y]
    cons[x, y] = prod[x, y]
    prod.compute_at(cons, y)
    pipe = decoded(cons)
    func(pipe, "prod3").func_schedule.compute_level.func_name = "nobody"
    refused(pipe, r"Func prod3~.compute_at\(nobody, ...\) names a Func the pipeline does not have")
