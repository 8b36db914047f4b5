"""The three-layer middle-end: algorithm, schedule, data layout; legality; lowering to loop IR."""
