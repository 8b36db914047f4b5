"""What C simulation needs: a C++ compiler and Xilinx's HLS headers (ap_int.h, hls_stream.h).

The headers come from the `hls4ml` wheel, which ships them for its own C
simulation (`pip install --no-deps hls4ml` is enough); they are found without
importing hls4ml. `MASCARPONE_HLS_INCLUDE` names another folder holding them
(a Vitis installation's `include/`).
"""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil

INSTALL = "pip install --no-deps hls4ml (and a C++ compiler: apt-get install g++)"


def cxx_compiler() -> str:
    """The C++ compiler command: $CXX, else g++."""
    return os.environ.get("CXX", "g++")


def header_dir() -> str | None:
    """The folder holding hls_stream.h and ap_int.h, or None."""
    override = os.environ.get("MASCARPONE_HLS_INCLUDE")
    candidates = [override] if override else []
    spec = importlib.util.find_spec("hls4ml")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates.append(os.path.join(root, "templates", "vivado", "ap_types"))
    for folder in candidates:
        if folder and os.path.isfile(os.path.join(folder, "hls_stream.h")):
            return folder
    return None


def missing() -> str | None:
    """What is missing to run C simulations here, or None."""
    cxx = cxx_compiler()
    if shutil.which(shlex.split(cxx)[0]) is None:
        return f"the C++ compiler {cxx!r} (set CXX to another one)"
    if header_dir() is None:
        return "Xilinx's HLS headers (hls_stream.h, ap_int.h) from the hls4ml wheel"
    return None


def flags(fp_contract=False) -> list:
    """g++ flags of a C simulation build: every float operation rounded (no contraction, as the
    hardware's operator cores) unless `fp_contract`, the pragmas ignored."""
    return ["-std=c++14", "-O2", f"-ffp-contract={'fast' if fp_contract else 'off'}", "-fno-math-errno", "-Wno-unknown-pragmas",
            f"-I{header_dir()}"]
