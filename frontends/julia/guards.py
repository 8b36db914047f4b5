"""Path conditions of basic blocks as small boolean formulas in disjunctive normal form.

A literal is (conditional-goto statement number, taken when the condition is
true?). Joining the two sides of an `if` gives back the guard before it, so
straight-line code after an `if`/`else` is unconditional again.
"""
from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from mascarpone.middleend.affine import param_names

TRUE = frozenset([frozenset()])
FALSE = frozenset()


def conj(guard, literal):
    """guard AND literal."""
    stmt, polarity = literal
    out = set()
    for term in guard:
        if (stmt, not polarity) in term:
            continue
        out.add(term | {literal})
    return simplify(out)


def disj(a, b):
    """a OR b."""
    return simplify(set(a) | set(b))


def simplify(terms):
    """Absorb terms implied by others and merge pairs differing in one literal's polarity."""
    terms = set(terms)
    changed = True
    while changed:
        changed = False
        for t in list(terms):
            if any(o < t for o in terms):
                terms.discard(t)
                changed = True
        items = sorted(terms, key=lambda t: (len(t), sorted(t)))
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                if len(a) != len(b):
                    continue
                diff = a ^ b
                if len(diff) == 2:
                    (s1, p1), (s2, p2) = sorted(diff)
                    if s1 == s2 and p1 != p2:
                        terms.discard(a)
                        terms.discard(b)
                        terms.add(a & b)
                        changed = True
                        break
            if changed:
                break
    return frozenset(terms)


def to_expr(guard, literal_expr):
    """The guard as a boolean expression (None when always true); `literal_expr(stmt)` gives a condition."""
    if guard == TRUE:
        return None
    if not guard:
        raise ValueError("an unreachable guard has no expression")
    out = None
    for term in sorted(guard, key=lambda t: sorted(t)):
        part = None
        for stmt, polarity in sorted(term):
            lit = literal_expr(stmt)
            lit = lit if polarity else ~lit
            part = lit if part is None else part & lit
        out = part if out is None else out | part
    return out


@dataclass(frozen=True)
class Reach:
    """The sizes for which a statement may run: an isl set on them (None: every size), and where its
    path condition also reads data or a non-integer argument, so that the set holds sizes where the
    statement may not run, a caveat that messages about it carry ("" otherwise)."""
    sizes: object = None
    caveat: str = ""

    def holds(self, params) -> bool:
        """Whether the statement may run with the sizes in `params` (name -> value)."""
        return self.sizes is None or sizes_hold(self.sizes, params)

    def union(self, other: Reach) -> Reach:
        """Where either statement may run."""
        sizes = None if self.sizes is None or other.sizes is None else self.sizes.union(other.sizes).coalesce()
        return Reach(sizes, self.caveat or other.caveat)


def sizes_hold(sizes, params) -> bool:
    """Whether the values in `params` (name -> value) of the parameters of the isl set `sizes` lie in it."""
    names = param_names(sizes)
    point = isl.Set(f"[{', '.join(names)}] -> {{ : {' and '.join(f'{n} = {params[n]}' for n in names) or 'true'} }}")
    return not sizes.intersect_params(point).is_empty()
