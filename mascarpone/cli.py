"""The `mascarpone` command.

    mascarpone demo                       the blur and gemm demo
    mascarpone lower PROGRAM.py [-f NAME] print the scheduled loop nest
    mascarpone deps PROGRAM.py [-f NAME]  print the dependences
    mascarpone compile PROGRAM.py [--target T] [-o OUT] [-f NAME] [--arch CPU]
                                          compile for a target (cpu by default); with -o write its
                                          files: OUT.o and OUT.h for cpu, OUT.c and OUT.h for c
    mascarpone targets                    the targets, and whether each can run here
    mascarpone bench [--suite S] [--filter RE] [--targets T,..] [--sizes small|paper] [--out DIR] ...
                                          the cross-DSL benchmarks (mascarpone bench --help)

PROGRAM.py is a Python file that builds one or more `ms.Function`s at module
level (and schedules them); `-f` picks one by name when there are several.

A Halide pipeline works too: if the file defines no ms.Function but an
`hl.Pipeline` or `hl.Func` at module level (with its schedule), it is read
through `ms.from_halide` (`-f` names the variable or the Func when there are
several). Its kernel follows Halide's conventions: `realize([width, height,
...], **inputs)` with sizes in Halide's order; numpy arrays as `hl.Buffer`
takes and gives them by default, so numpy's last axis is Halide's dimension 0
(an image of width W and height H is an array of shape (H, W)). The object
file's C function takes the buffers row-major in that same reversed order,
followed by the int64 size parameters (`out_extent_0` is the width, ...).
"""
from __future__ import annotations

import argparse
import runpy
import sys

from mascarpone.middleend.errors import MascarponeError
from mascarpone.middleend.function import Function
from mascarpone.middleend.targets import targets


def load_function(path, name=None) -> Function:
    """Run a program file and return the ms.Function it defines (the one called `name` if given)."""
    try:
        namespace = runpy.run_path(path, run_name="__mascarpone__")
    except FileNotFoundError:
        raise MascarponeError(f"no such file: {path}") from None
    except MascarponeError:
        raise
    except Exception as err:  # the user's program failed before giving us a Function
        raise MascarponeError(f"running {path} failed: {type(err).__name__}: {err}") from err
    functions = {v.name: v for v in namespace.values() if isinstance(v, Function)}
    if not functions:
        halide = _halide_function(namespace, path, name)
        if halide is not None:
            return halide
        raise MascarponeError(f"{path} defines no ms.Function (nor a Halide Pipeline or Func) at module level")
    if name is not None:
        if name not in functions:
            raise MascarponeError(f"{path} has no function {name!r}; it has {sorted(functions)}")
        return functions[name]
    if len(functions) > 1:
        raise MascarponeError(f"{path} defines several functions {sorted(functions)}; pick one with -f NAME")
    return next(iter(functions.values()))


def _halide_function(namespace, path, name):
    """The ms.Function of the Halide Pipeline or Func a program defines (the one called `name`), or None."""
    if "halide" not in sys.modules:
        return None
    import halide as hl

    from mascarpone.frontends.halide import from_halide
    candidates = {k: v for k, v in namespace.items() if isinstance(v, hl.Pipeline) and not k.startswith("_")}
    if not candidates:
        candidates = {k: v for k, v in namespace.items() if isinstance(v, hl.Func) and not k.startswith("_")}
    if not candidates:
        return None
    if name is not None:
        picked = candidates.get(name) or next((v for v in candidates.values()
                                               if isinstance(v, hl.Func) and v.name() == name), None)
        if picked is None:
            raise MascarponeError(f"{path} has no Halide pipeline or Func {name!r}; it has {sorted(candidates)}")
        return from_halide(picked)
    if len(candidates) > 1:
        raise MascarponeError(f"{path} defines several Halide pipelines or Funcs {sorted(candidates)}; "
                              f"pick one with -f NAME")
    return from_halide(next(iter(candidates.values())))


def main(argv=None):
    """Entry point of the `mascarpone` command."""
    parser = argparse.ArgumentParser(prog="mascarpone", description="polyhedral compiler for array programs")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="schedule, check and time a blur and a gemm")
    sub.add_parser("targets", help="list the targets and whether each can run here")
    from mascarpone.bench.cli import add_parser as add_bench_parser
    add_bench_parser(sub)
    for cmd, text in (("lower", "print the loop nest"), ("deps", "print the dependences"),
                      ("compile", "compile for a target; with -o, write its files (object or C source, "
                                  "and a C header)")):
        p = sub.add_parser(cmd, help=text)
        p.add_argument("program")
        p.add_argument("-f", "--function")
        if cmd == "compile":
            p.add_argument("-o", "--output", help="file to write: an object file for cpu, C source for c "
                                                  "(a C header is written beside it)")
            p.add_argument("--target", default="cpu", help="a target `mascarpone targets` lists (default cpu)")
            p.add_argument("--arch", help="the CPU to generate code for (default: this machine's)")
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from mascarpone import demo
            demo.main()
            return 0
        if args.command == "targets":
            print(targets())
            return 0
        if args.command == "bench":
            from mascarpone.bench.cli import main as bench_main
            return bench_main(args)
        f = load_function(args.program, args.function)
        options = {} if getattr(args, "arch", None) is None else {"arch": args.arch}
        if args.command == "lower":
            print(f.lower())
        elif args.command == "deps":
            print(f.dependences())
        elif args.output:
            written = f.compile_to_file(args.output, args.target, **options)
            print(f"wrote {' and '.join(map(str, written))}")
        else:
            kernel = f.compile(args.target, **options)
            print(f"compiled {f.name} for {args.target}: {getattr(kernel, 'kernel', kernel)!r}")
        return 0
    except MascarponeError as err:
        print(f"mascarpone: {type(err).__name__}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
