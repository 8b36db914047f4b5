"""Where a Func computed at a consumer's loop (compute_at) lands: which stage and which Tuple element
of the consumer hold it.

A Func is computed inside a stage of its consumer that reads it: directly, through Funcs inlined into
it, or through Funcs computed inside that stage's loops themselves (a pyramid's levels computed at one
loop of the output, each read by the next). Halide names the stage only when the schedule does
(`compute_at(h.update(0), x)`); otherwise it is the one stage that reads the Func. Tuple elements
are separate computations here, sharing their loops: a Func goes to the first element that reads it,
and so does everything computed at the same loops that it reads.
"""
from __future__ import annotations

from mascarpone.middleend.errors import NotSupportedError

from .pipeline import func_calls


def _called(node):
    """Indices of the Funcs called under a definition's node (or list of nodes)."""
    return {n.func_index for n in func_calls(node)}


class TileReaders:
    """Answers, for the Funcs of a translation computed at consumers' loops, the consumer's stage and
    Tuple element (memoized: a Func's answer may depend on those computed beside it)."""

    def __init__(self, tr, placement):
        self.tr = tr
        self.placement = placement   # schedule.placement
        self._stage, self._element = {}, {}

    def _through_inlined(self, start):
        """The Funcs reached from the indices `start` through Funcs that are inlined."""
        seen, todo = set(), list(start)
        while todo:
            j = todo.pop()
            if j in seen or not 0 <= j < len(self.tr.funcs):
                continue
            seen.add(j)
            g = self.tr.funcs[j]
            if self.placement(self.tr, g) == "inline":
                todo += [c for d in g.stages for c in _called(d)]
        return seen

    def _inside(self, consumer, k, element):
        """The Funcs computed at stage k (and Tuple element) of `consumer`, and at those, recursively."""
        out, frontier = [], [consumer]
        while frontier:
            host = frontier.pop()
            for g in self.tr.funcs:
                level = g.schedule.compute_level if g.schedule is not None else None
                if g in out or g is consumer or level is None or level.func_name != host.name or \
                        self.placement(self.tr, g) != "tile":
                    continue
                if host is consumer and self._ambiguous(consumer) and not self._lands(g, k, element):
                    continue
                out.append(g)
                frontier.append(g)
        return out

    @staticmethod
    def _ambiguous(consumer):
        """Whether Funcs computed at `consumer` may land in different stages or Tuple elements."""
        return len(consumer.stages) > 1 or len(consumer.dtypes) > 1

    def _lands(self, g, k, element):
        """Whether `g` lands in stage k (and Tuple element) of its consumer; a Func still being decided
        (asked about through the Funcs beside it) counts as landing there."""
        try:
            gk, ge = self.where(g)
        except NotSupportedError:
            return False
        if gk is None:
            return True
        return gk == k and (element is None or ge == element)

    def _reads(self, consumer, k, nodes, element, info):
        """Whether `nodes` of stage k of `consumer`, or the Funcs computed inside its loops, read `info`."""
        if info.index in self._through_inlined(_called(nodes)):
            return True
        for g in self._inside(consumer, k, element):
            if g is not info and info.index in self._through_inlined(c for d in g.stages for c in _called(d)):
                return True
        return False

    def where(self, info):
        """(stage, Tuple element) of the consumer that `info` is computed in; (None, None) while being
        decided (a Func asked about itself through the Funcs beside it)."""
        if info.index in self._stage:
            return self._stage[info.index], self._element[info.index]
        self._stage[info.index] = self._element[info.index] = None
        level = info.schedule.compute_level
        consumer = next((f for f in self.tr.funcs if f.name == level.func_name), None)
        if consumer is None:
            raise NotSupportedError(f"Func {info.name} is computed at {level.func_name}.{level.var_name}, a Func "
                                    f"the pipeline does not have")
        stages = range(len(consumer.stages))
        if level.stage_index >= 0:
            readers = [level.stage_index]
        else:
            readers = [k for k in stages if self._reads(consumer, k, consumer.stages[k], None, info)]
            if len(readers) != 1:
                del self._stage[info.index], self._element[info.index]
                raise NotSupportedError(
                    f"Func {info.name} is computed at {level.func_name}.{level.var_name}, and "
                    f"{'several stages' if readers else 'no stage'} of {consumer.name} read it; name the stage "
                    f"(compute_at({consumer.name}.update(n), {level.var_name}))")
        k = readers[0]
        d = consumer.stages[k]
        shared = [d.args, d.predicate]
        elements = [v for v in range(len(d.values))
                    if self._reads(consumer, k, [d.values[v]] + shared, v, info)]
        self._stage[info.index], self._element[info.index] = k, (elements[0] if elements else 0)
        return k, self._element[info.index]
