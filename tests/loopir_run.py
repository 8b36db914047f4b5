"""The points a kernel's loop IR stores to, found by running its loops and conditions (not its values)."""
import collections

from mascarpone.backends.common.evaluate import evaluate
from mascarpone.middleend import loopir as L


def stored_points(lowered, values, buffer_name):
    """Counter of the indices of `buffer_name` that `lowered` stores to, for the size parameters
    `values` (the sizes it derives on entry are computed as the kernel does)."""
    return collections.Counter(stores_in_order(lowered, values, buffer_name))


def stores_in_order(lowered, values, buffer_name):
    """The indices of `buffer_name` that `lowered` stores to, in the order its loops (run serially)
    store them, for the size parameters `values`."""
    env = {p: values[p] for p in lowered.params}
    for name, value in lowered.derived:
        env[name] = evaluate(value, env)
    stores = []

    def run(s, env):
        if isinstance(s, L.Block):
            for c in s.body:
                run(c, env)
        elif isinstance(s, L.For):
            for v in range(evaluate(s.lo, env), evaluate(s.hi, env)):
                run(s.body, dict(env, **{s.var: v}))
        elif isinstance(s, L.If):
            if evaluate(s.cond, env):
                run(s.then, env)
            elif s.else_ is not None:
                run(s.else_, env)
        elif isinstance(s, L.Allocate):
            run(s.body, env)
        elif isinstance(s, L.Store) and s.buffer.name == buffer_name:
            stores.append(tuple(evaluate(i, env) for i in s.indices))
    run(lowered.body, env)
    return stores
