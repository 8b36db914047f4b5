"""Timing contenders side by side: interleaved rounds, medians and quartiles, differences beyond noise.

Each round runs every contender in turn, so a load that drifts on a shared machine touches them
alike. Within a round a fast contender runs a burst of calls and the first is not counted: it pays
for waking the worker threads of an idle machine, which can take longer than the call itself. A
slow contender (a naive loop nest taking seconds) runs one call per round and takes part in fewer
rounds, so that it stays within a time budget.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

#: seconds of quiet that let the worker threads of the last call go to sleep before another library's call is
#: timed: OpenBLAS's threads, and ours, spin for about 0.1 s after a call, and a call that starts meanwhile
#: loses cores to them (on 2 cores, an sgemm timed right after numpy's took 1.5 to 2 times its time)
QUIET_S = 0.3

#: a call shorter than this runs in bursts of BURST calls per round (the first not counted)
FAST_S = 0.2
BURST = 3


@dataclass
class Plan:
    """How many rounds a contender takes part in, and how many calls per round it runs."""
    rounds: int
    burst: int

    @property
    def counted(self) -> int:
        return self.rounds * (self.burst - 1 if self.burst > 1 else 1)


def plan(single_s: float, repeat: int, budget_s: float) -> Plan:
    """The plan for a contender whose one call took `single_s` seconds: `repeat` rounds, fewer (at
    least 3) when they would take longer than `budget_s`."""
    if single_s < FAST_S:
        return Plan(repeat, BURST)
    rounds = max(3, min(repeat, math.floor(budget_s / max(single_s, 1e-9))))
    return Plan(min(rounds, repeat), 1)


def warm_up(calls, seconds: float) -> None:
    """Run each call for about `seconds` (caches, page tables, the threads' first wake-ups)."""
    for call in calls:
        start = time.perf_counter()
        call.burst(1)
        while time.perf_counter() - start < seconds:
            call.burst(1)


def interleaved(calls, plans, pause_s=0.0, on_round=None) -> list:
    """Per call, the seconds of its counted runs over interleaved rounds (see the module); `pause_s`
    between bursts lets the threads of the last contender go to sleep (OpenBLAS's spin about 0.1 s
    after a call, taking the cores from whatever runs next)."""
    samples = [[] for _ in calls]
    for r in range(max((p.rounds for p in plans), default=0)):
        for call, p, out in zip(calls, plans, samples):
            if r < p.rounds:
                if pause_s:
                    time.sleep(pause_s)
                times = call.burst(p.burst)
                out.extend(times[1:] if p.burst > 1 else times)
        if on_round:
            on_round(r + 1)
    return samples


@dataclass
class Stats:
    """Median and quartiles of a sample of times (seconds)."""
    median: float
    q1: float
    q3: float
    n: int

    @classmethod
    def of(cls, times) -> "Stats":
        q1, med, q3 = np.percentile(np.asarray(times, float), [25, 50, 75])
        return cls(float(med), float(q1), float(q3), len(times))

    @property
    def spread(self) -> float:
        """The interquartile range relative to the median."""
        return (self.q3 - self.q1) / self.median if self.median > 0 else 0.0


def beyond_noise(a_q1, a_q3, b_q1, b_q3) -> bool:
    """Two timings differ beyond the measured noise when their interquartile ranges do not overlap."""
    return a_q3 < b_q1 or b_q3 < a_q1
