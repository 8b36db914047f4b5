"""Appending a benchmark run to benchmarks/RESULTS.md: a dated heading naming the machine, then the table."""
from __future__ import annotations

import datetime
import os
import platform
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def append_results(title: str, table: str, intro: str = "") -> None:
    """Append `table` under a heading with the date, `title` and this machine's CPU and core count."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    machine = platform.processor() or platform.machine()
    with RESULTS.open("a") as out:
        out.write(f"\n## {stamp} — {title}, {machine}, {os.cpu_count()} cores\n\n"
                  + (f"{intro}\n\n" if intro else "") + f"{table}\n")
