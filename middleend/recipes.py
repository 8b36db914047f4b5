"""Schedules written once as commands, for the autoscheduler and for hand schedules alike."""
from __future__ import annotations


def blis_nest(comp, a, r, v, mc, kc, nc, mr, nr):
    """Cut `comp`'s innermost loops (a, r, v) of a contraction (v stride-one, r the reduction) into
    BLIS's nest v0, r0, a0, v10, a10, r1, a11, v11 (loops outside them stay outside): panels of nc
    values of v, blocks of kc of r and mc of a, swept by mr x nr register tiles with the mr values of
    a unrolled and the nr of v as vectors. Returns (v0, r0, a0): the loops a panel's, a block of r's
    and a block of a's copies go at."""
    outer = comp.loops[:comp.loops.index(a)]
    v0, v1 = comp.split(v, nc)
    r0, r1 = comp.split(r, kc)
    a0, a1 = comp.split(a, mc)
    v10, v11 = comp.split(v1, nr)
    a10, a11 = comp.split(a1, mr)
    comp.reorder(*outer, v0, r0, a0, v10, a10, r1, a11, v11)
    comp.unroll(a11, mr)
    comp.vectorize(v11, nr)
    return v0, r0, a0
