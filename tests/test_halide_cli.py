"""`mascarpone compile pipeline.py --target cpu` on a file that defines a Halide pipeline."""
import re

import pytest

from mascarpone.cli import main

pytest.importorskip("halide")

PROGRAM = '''
import halide as hl
x, y = hl.Var("x"), hl.Var("y")
inp = hl.ImageParam(hl.UInt(8), 2, "inp")
avg = hl.Func("avg")
avg[x, y] = (hl.u16(inp[x, y]) + inp[x + 1, y]) / 2
avg.vectorize(x, 8).parallel(y)
'''


def test_compile_halide_program(tmp_path, capsys):
    path = tmp_path / "pipeline.py"
    path.write_text(PROGRAM)
    assert main(["compile", str(path), "--target", "cpu"]) == 0
    # (Halide suffixes `$n` to a name whose counter other names share: `avg_n` then)
    assert re.search(r"compiled avg(_\d+)? for cpu", capsys.readouterr().out)
    assert main(["compile", str(path), "-o", str(tmp_path / "avg.o")]) == 0
    assert (tmp_path / "avg.o").stat().st_size > 0 and (tmp_path / "avg.h").exists()


def test_unsupported_halide_program_reports_the_func(tmp_path, capsys):
    path = tmp_path / "pipeline.py"
    path.write_text(PROGRAM + "avg.specialize(inp.width() > 8)\n")
    assert main(["compile", str(path)]) == 2
    assert "avg" in capsys.readouterr().err
