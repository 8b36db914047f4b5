"""mascarpone bench: the runner on small sizes (two benchmarks, two targets, one peer) writes the table,
JSON, CSV and plots with the expected rows; wrong or failing variants are reported and not timed;
Ctrl-C keeps what finished; --compare on two stored result files; the numpy peer's own process;
publishing into README and RESULTS.md. No test asserts a time."""
from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

import differential
import mascarpone as ms
import mascarpone.bench as mb
from mascarpone.bench import cli, publish, report, runner, views
from mascarpone.bench.blas_process import PINNING, BlasProcess
from mascarpone.bench.model import Benchmark, Call, Peer, Variant
from mascarpone.middleend.function import Function

DATA = Path(__file__).parent / "bench_data"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """cvtColor and triangular of the tiramisu suite on cpu and c beside Halide's JIT, at small sizes.

    The runner times the targets' own kernels: differential testing (conftest.py), which would run the
    c kernel inside every cpu call, is off for this run."""
    out = tmp_path_factory.mktemp("bench")
    saved = Function.compile
    Function.compile = differential._original_compile
    try:
        doc = mb.bench(suite="tiramisu", filter=["^tiramisu/(cvtColor|triangular)$"], targets=["cpu", "c"],
                       peers=["Halide JIT"], sizes="small", repeat=2, out=out, progress=False)
    finally:
        Function.compile = saved
    return doc, out


def _records(doc, benchmark):
    return {(r["kind"], r["name"], r["target"]): r for r in doc["results"] if r["benchmark"] == benchmark}


def test_small_run_has_every_variant_target_and_peer(small_run):
    doc, _ = small_run
    cvt, tri = _records(doc, "cvtColor"), _records(doc, "triangular")
    for dsl in ("mascarpone", "halide"):
        for target in ("cpu", "c"):
            r = cvt["variant", dsl, target]
            assert r["status"] == "ok", r
            assert r["n"] == len(r["times"]) >= 2 and r["q1"] <= r["median"] <= r["q3"]
            assert r["compile_s"] > 0 and r["loop_nest"].startswith("for")
    assert cvt["variant", "julia", None]["status"] == "not supported"
    assert "UInt8" in cvt["variant", "julia", None]["error"]
    for dsl in ("mascarpone", "halide", "julia"):
        for target in ("cpu", "c"):
            assert tri["variant", dsl, target]["status"] == "ok"
            assert tri["variant", dsl, target]["max_error"] <= 1e-9
    assert cvt["peer", "Halide JIT", None]["status"] == "ok"
    assert ("peer", "numpy/OpenBLAS", None) not in tri            # peers outside --peers do not run
    assert "JIT" in doc["peers_how"]["Halide JIT"]
    s = doc["stamp"]
    assert s["machine"]["cores"] >= 1 and s["machine"]["cpu"]
    assert s["versions"]["numpy"] == np.__version__ and s["options"]["targets"] == ["cpu", "c"]
    assert s["commit"] is None or len(s["commit"]) == 40


def test_small_run_writes_table_json_csv_and_plots(small_run):
    doc, out = small_run
    assert json.loads((out / "results.json").read_text())["results"] == json.loads(json.dumps(doc["results"]))
    md = (out / "results.md").read_text()
    for row in ("| tiramisu | cvtColor | 512x384 | mascarpone | cpu |", "| tiramisu | cvtColor | 512x384 | halide | c |",
                "| tiramisu | triangular | 300x300 | julia | c |", "| tiramisu | cvtColor | 512x384 | Halide JIT |  |"):
        assert row in md
    assert "not supported: cvtColor works on UInt8 images" in md
    assert "| triangular | cpu |" in md.split("## Cross-DSL parity")[1]            # three DSLs on one target
    assert "| cvtColor | mascarpone | c |" in md.split("## Targets")[1]            # c against cpu
    lines = (out / "results.csv").read_text().splitlines()
    assert lines[0].startswith("benchmark,suite,size,kind,name") and len(lines) == 1 + len(doc["results"])
    for name in ("times.png", "speedup.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (out / name.replace(".png", ".svg")).read_text().lstrip().startswith("<?xml")


def _scale_program(factor):
    """out = img * factor: the test's own tiny program."""
    H, W = ms.Param("H"), ms.Param("W")
    y, x = ms.Var("y", 0, H), ms.Var("x", 0, W)
    with ms.Function(f"scale{factor}".replace(".", "_")) as f:
        img = ms.Input("img", [H, W], ms.float32)
        ms.Computation("out", [y, x], img[y, x] * ms.f32(factor))
    return f


def _bind_scale(kernel, data, size):
    out = np.empty_like(data["img"])
    return Call(lambda: kernel(img=data["img"], out=out), lambda: [out.copy()])


def _illegal_program():
    """A running sum with its recurrence loop vectorized: refused when compiled."""
    with ms.Function("recurrence") as g:
        N = ms.Param("N")
        i, i1 = ms.Var("i", 0, N), ms.Var("i", 1, N)
        a = ms.Input("a", [N], ms.float32)
        s = ms.Computation("s", [i], a[i])
        u = s.update([i1], s[i1 - 1] + a[i1])
    u.vectorize("i", 4)
    return g


def test_wrong_variant_is_reported_and_not_timed_and_the_run_goes_on(monkeypatch):
    monkeypatch.setattr(Function, "compile", differential._original_compile)
    bench = Benchmark(
        "scale", "test", {"small": (16, 24), "paper": (16, 24)},
        data=lambda size: {"img": np.random.default_rng(0).random((size[1], size[0]), dtype=np.float32)},
        reference=lambda data, size: [data["img"] * np.float32(2)],
        variants=[Variant("mascarpone", lambda size: _scale_program(2.0), _bind_scale),
                  Variant("mascarpone", lambda size: _scale_program(2.5), _bind_scale, label="deliberately wrong"),
                  Variant("mascarpone", lambda size: _illegal_program(), _bind_scale, label="illegal schedule"),
                  Variant.absent("halide", "not written", "no Halide version")],
        peers=[Peer("numpy", lambda data, size, env: Call(lambda: None, lambda: [data["img"] * np.float32(2)])),
               Peer("numba parallel", cannot="loops carry dependences")],
        tol=None, describe=lambda size: f"{size[0]}x{size[1]}")
    # a target registered by another package but unusable here gets a row saying why
    elsewhere = "target 'fpga' cannot run here: no FPGA toolchain; install: (its package's command)"
    monkeypatch.setattr(runner, "resolve_targets", lambda names: [("cpu", None), ("fpga", elsewhere)])
    doc = runner.run([bench], targets=["cpu", "fpga"], repeat=2, progress=False)
    assert {(r["name"], r["status"], r["error"]) for r in doc["results"] if r["target"] == "fpga"} == \
        {(n, "cannot run", elsewhere) for n in ("mascarpone", "mascarpone (deliberately wrong)",
                                               "mascarpone (illegal schedule)")}
    doc["results"] = [r for r in doc["results"] if r["target"] != "fpga"]
    recs = {r["name"]: r for r in doc["results"]}
    good, wrong, illegal = recs["mascarpone"], recs["mascarpone (deliberately wrong)"], recs["mascarpone (illegal schedule)"]
    assert good["status"] == "ok" and good["n"] == 4 and good["max_error"] == 0.0
    assert wrong["status"] == "wrong" and wrong["times"] == [] and wrong["median"] is None
    assert "elements differ" in wrong["error"] and wrong["max_error"] > 0
    assert illegal["status"] == "failed" and "IllegalScheduleError" in illegal["error"] and illegal["times"] == []
    assert recs["halide"]["status"] == "not written"
    assert recs["numpy"]["status"] == "ok" and recs["numba parallel"]["status"] == "n/a"
    md = report.markdown(doc)
    assert "mascarpone (deliberately wrong) on cpu: **wrong**" in md
    assert "mascarpone (illegal schedule) on cpu: **failed**: compiling: IllegalScheduleError" in md
    assert all(name in {r["variant"] for r in views.speedups(doc)} for name in ("mascarpone",))
    assert "mascarpone (deliberately wrong)" not in {r["variant"] for r in views.speedups(doc)}


def test_unknown_target_is_refused_by_name():
    with pytest.raises(ms.TargetError, match="unknown target.*'gpu0'.*registered"):
        runner.resolve_targets(["cpu", "gpu0"])


def test_ctrl_c_keeps_the_benchmarks_that_finished():
    def interrupt(size):
        raise KeyboardInterrupt

    done = Benchmark("first", "test", {"small": 1}, data=lambda size: {"v": np.arange(3.0)},
                     reference=lambda data, size: [data["v"]],
                     peers=[Peer("python", lambda data, size, env: Call(lambda: None, lambda: [data["v"]]))])
    stopped = Benchmark("second", "test", {"small": 1}, data=interrupt, reference=lambda data, size: [])
    never = Benchmark("third", "test", {"small": 1}, data=lambda size: {}, reference=lambda data, size: [])
    log = io.StringIO()
    doc = runner.run([done, stopped, never], targets=["cpu"], repeat=2, stream=log)
    assert doc["interrupted"] == "second"
    lines = log.getvalue().splitlines()
    assert lines[0] == "[1/3] first (1) · data and reference · time left unknown"
    assert any(line.startswith("[2/3] second (1) · data and reference · about 0m") for line in lines)
    assert lines[-1].startswith("1 of 3 benchmarks done in") and lines[-1].endswith("; interrupted during second")
    assert [(r["benchmark"], r["status"]) for r in doc["results"]] == [("first", "ok")]
    assert "**Interrupted** during second" in report.markdown(doc)


def test_the_stamp_says_other_work_competed_only_above_the_core_count():
    doc = report.load(DATA / "new.json")
    cores = doc["stamp"]["machine"]["cores"]
    for load, busy in (((0.4, cores - 0.1), False), ((0.4, cores + 0.5), True)):
        doc["stamp"]["load"] = {"start": load[0], "end": load[1]}
        text = report.stamp_text(doc)
        assert f"{load[1]:.2f} at the end, for {cores} cores" in text
        assert ("above the core count" in text) == busy


def test_compare_two_stored_result_files(capsys):
    old, new = report.load(DATA / "old.json"), report.load(DATA / "new.json")
    c = mb.compare(old, new)
    assert [(r["benchmark"], r["name"]) for r, _ in c.faster] == [("gaussian", "mascarpone")]
    assert [(r["benchmark"], r["name"]) for r, _ in c.slower] == [("heat2D", "mascarpone")]
    assert {(r["benchmark"], r["name"]) for r, _ in c.within_noise} == {("gaussian", "halide"), ("heat2D", "Halide JIT")}
    assert [(r["name"], o, n) for r, o, n in c.status_changes] == [("julia", "wrong", "ok")]
    assert [r["benchmark"] for r in c.only_old] == ["nb"] and [r["benchmark"] for r in c.only_new] == ["triangular"]
    from mascarpone.cli import main
    assert main(["bench", "--compare", str(DATA / "old.json"), str(DATA / "new.json")]) == 0
    text = capsys.readouterr().out
    assert "faster beyond noise (1):\n  gaussian (512x384), mascarpone on cpu: 0.70x" in text
    assert "slower beyond noise (1):\n  heat2D (512x384), mascarpone on cpu: 1.50x" in text
    assert "heat2D (512x384), julia on c: wrong -> ok" in text
    assert "2 within noise, 1 only in the old run, 1 only in the new one" in text


def test_compare_refuses_a_file_that_is_not_a_result(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text('{"results": []}')
    from mascarpone.cli import main
    assert main(["bench", "--compare", str(bad), str(DATA / "new.json")]) == 2
    assert "is not a result file of mascarpone bench" in capsys.readouterr().err


def test_numpy_peer_runs_with_this_cpus_blas_kernel_in_its_own_process():
    before = {k: os.environ.get(k) for k in PINNING}
    blas = BlasProcess(threads=1)
    try:
        rng = np.random.default_rng(0)
        A, B = rng.random((64, 48), dtype=np.float32), rng.random((48, 32), dtype=np.float32)
        call = blas.bind("mascarpone.bench.suite.numpy_peers:sgemm", [A, B, np.empty((64, 32), np.float32)], [2])
        assert len(call.burst(3)) == 3
        np.testing.assert_allclose(call.outputs()[0], A @ B, rtol=1e-5)
        info = blas.info()
    finally:
        blas.close()
    assert info["env"] == {k: None for k in PINNING}            # the peer's process runs without them
    assert info["unset"] == before                               # ... and reports what this one had
    assert {k: os.environ.get(k) for k in PINNING} == before     # this process keeps its environment
    assert info["blas"] and info["blas"][0]["architecture"] and info["blas"][0]["num_threads"] == 1


def test_publish_writes_readme_tables_and_a_results_section(small_run, tmp_path):
    doc, out = small_run
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "RESULTS.md").write_text("# Benchmark results\n")
    (tmp_path / "README.md").write_text(f"intro\n{publish.BEGIN}\nold table\n{publish.END}\nrest\n")
    publish.publish(out, root=tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("intro\n") and readme.endswith(f"{publish.END}\nrest\n") and "old table" not in readme
    assert "| tiramisu | cvtColor | 512x384 |" in readme and "Cross-DSL parity" in readme
    section = (tmp_path / "benchmarks" / "RESULTS.md").read_text()
    assert section.startswith("# Benchmark results\n\n## ") and "### Speedup over the peers" in section
    assert json.loads((tmp_path / "benchmarks" / "RESULTS.json").read_text())["results"] == \
        json.loads(json.dumps(doc["results"]))
    (tmp_path / "README.md").write_text("no markers\n")
    with pytest.raises(publish.PublishError, match="no generated benchmark part"):
        publish.publish(out, root=tmp_path)


def test_cli_lists_the_suite_and_refuses_an_unknown_suite(capsys):
    from mascarpone.cli import main
    assert main(["bench", "--suite", "tiramisu", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "tiramisu/edgeDetector: variants mascarpone, halide (cannot express), julia" in listed
    assert main(["bench", "--suite", "nosuch"]) == 2
    assert "no suite 'nosuch'" in capsys.readouterr().err
    assert cli.DESCRIPTION.startswith("Run the cross-DSL benchmarks")
