"""What every back-end shares.

Modules: arguments (binding a call's arguments, with shape, dtype and size
checks), kernel (the Kernel base class: bind, check, launch, source; and
NativeKernel for code loaded into this process), threads (the default thread
count), evaluate (the loop IR's integer semantics in Python), affine (trip
counts and strides of index expressions), promote (accumulators kept in
local tiles, a pass over the loop IR), cheader (the C calling convention and
its header).
"""
