"""The layout of Halide's serialized pipelines (halide_ir.fbs of Halide v21, serialization version 18.0.1).

Each table is a list of (field name, kind) in declaration order; a field's
vtable slot follows from its position. Kinds: scalar names ('bool', 'int32',
...), 'str', a table name, 'Expr' (a union: two slots, type then value),
and '[kind]' for vectors ('[Expr]' and '[Stmt]' are vectors of unions and also take two
slots; of statements only the AssertStmt of `Pipeline.add_requirement` is read).
"""

SUPPORTED_VERSIONS = ("18.0.1",)

#: Members of the Expr union, in order; the union's type byte is the position + 1 (0 is NONE).
EXPR_KINDS = (
    "IntImm", "UIntImm", "FloatImm", "StringImm", "Cast", "Reinterpret", "Add", "Sub", "Mul", "Div", "Mod",
    "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE", "And", "Or", "Not", "Select", "Load", "Ramp",
    "Broadcast", "Let", "Call", "Variable", "Shuffle", "VectorReduce", "UndefinedExpr",
)

#: Members of the Stmt union, in order (type byte = position + 1); requirements are AssertStmts.
STMT_KINDS = (
    "LetStmt", "AssertStmt", "ProducerConsumer", "For", "Store", "Provide", "Allocate", "Free", "Realize", "Block",
    "IfThenElse", "Evaluate", "Prefetch", "Acquire", "Fork", "Atomic", "HoistedStorage", "UndefinedStmt",
)

FOR_TYPES = ("Serial", "Parallel", "Vectorized", "Unrolled", "Extern", "GPUBlock", "GPUThread", "GPULane")
CALL_TYPES = ("Image", "Extern", "ExternCPlusPlus", "PureExtern", "Halide", "Intrinsic", "PureIntrinsic")
TYPE_CODES = ("Int", "UInt", "Float", "Handle", "BFloat")
TAIL_STRATEGIES = ("RoundUp", "GuardWithIf", "Predicate", "PredicateLoads", "PredicateStores", "ShiftInwards",
                   "ShiftInwardsAndBlend", "RoundUpAndBlend", "Auto")
SPLIT_TYPES = ("SplitVar", "RenameVar", "FuseVars")

_AB = [("a", "Expr"), ("b", "Expr")]

TABLES = {
    # expressions
    "IntImm": [("value", "int64"), ("type", "Type")],
    "UIntImm": [("value", "uint64"), ("type", "Type")],
    "FloatImm": [("value", "float64"), ("type", "Type")],
    "StringImm": [("value", "str")],
    "Cast": [("value", "Expr"), ("type", "Type")],
    "Reinterpret": [("value", "Expr"), ("type", "Type")],
    **{k: _AB for k in ("Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE",
                        "And", "Or")},
    "Not": [("a", "Expr")],
    "Select": [("condition", "Expr"), ("true_value", "Expr"), ("false_value", "Expr")],
    "Load": [("name", "str"), ("predicate", "Expr"), ("index", "Expr"), ("image_name", "str"),
             ("param_name", "str"), ("alignment", "ModulusRemainder"), ("type", "Type")],
    "Ramp": [("base", "Expr"), ("stride", "Expr"), ("lanes", "int32")],
    "Broadcast": [("value", "Expr"), ("lanes", "int32")],
    "Let": [("name", "str"), ("value", "Expr"), ("body", "Expr")],
    "Call": [("name", "str"), ("args", "[Expr]"), ("call_type", "uint8"), ("func_index", "int32"),
             ("value_index", "int32"), ("image_name", "str"), ("param_name", "str"), ("type", "Type")],
    "Variable": [("name", "str"), ("type", "Type"), ("param_name", "str"), ("image_name", "str"),
                 ("reduction_domain", "ReductionDomain")],
    "Shuffle": [("vectors", "[Expr]"), ("indices", "[int32]")],
    "VectorReduce": [("value", "Expr"), ("reduction_op", "uint8"), ("lanes", "int32")],
    "UndefinedExpr": [],
    "AssertStmt": [("condition", "Expr"), ("message", "Expr")],
    # helpers
    "ModulusRemainder": [("modulus", "int64"), ("remainder", "int64")],
    "Type": [("code", "int8"), ("bits", "uint8"), ("lanes", "int32")],
    "Range": [("min", "Expr"), ("extent", "Expr")],
    "ReductionVariable": [("var", "str"), ("min", "Expr"), ("extent", "Expr")],
    "ReductionDomain": [("defined", "bool"), ("domain", "[ReductionVariable]"), ("predicate", "Expr"),
                        ("frozen", "bool")],
    # schedules
    "Bound": [("var", "str"), ("min", "Expr"), ("extent", "Expr"), ("modulus", "Expr"), ("remainder", "Expr")],
    "StorageDim": [("var", "str"), ("alignment", "Expr"), ("bound", "Expr"), ("fold_factor", "Expr"),
                   ("fold_forward", "bool")],
    "LoopLevel": [("func_name", "str"), ("stage_index", "int32"), ("var_name", "str"), ("is_rvar", "bool"),
                  ("locked", "bool")],
    "WrapperRef": [("func_name", "str"), ("func_index", "int32")],
    "FuncSchedule": [("store_level", "LoopLevel"), ("compute_level", "LoopLevel"),
                     ("hoist_storage_level", "LoopLevel"), ("storage_dims", "[StorageDim]"),
                     ("bounds", "[Bound]"), ("estimates", "[Bound]"), ("wrappers", "[WrapperRef]"),
                     ("memory_type", "int8"), ("memoized", "bool"), ("async", "bool"), ("ring_buffer", "Expr"),
                     ("memoize_eviction_key", "Expr")],
    "Specialization": [("condition", "Expr"), ("definition", "Definition"), ("failure_message", "str")],
    "Split": [("old_var", "str"), ("outer", "str"), ("inner", "str"), ("factor", "Expr"), ("exact", "bool"),
              ("tail", "uint8"), ("split_type", "uint8")],
    "Dim": [("var", "str"), ("for_type", "int8"), ("device_api", "int8"), ("dim_type", "uint8"),
            ("partition_policy", "int8")],
    "PrefetchDirective": [("name", "str"), ("at", "str"), ("from", "str"), ("offset", "Expr"),
                          ("strategy", "uint8"), ("param_name", "str")],
    "FuseLoopLevel": [("fuse_level", "LoopLevel"), ("align_dimension_names", "[str]"),
                      ("align_strategies", "[uint8]")],
    "FusedPair": [("func_1", "str"), ("func_2", "str"), ("stage_1", "int32"), ("stage_2", "int32"),
                  ("var_name", "str")],
    "StageSchedule": [("rvars", "[ReductionVariable]"), ("splits", "[Split]"), ("dims", "[Dim]"),
                      ("prefetches", "[PrefetchDirective]"), ("fuse_level", "FuseLoopLevel"),
                      ("fused_pairs", "[FusedPair]"), ("touched", "bool"), ("allow_race_conditions", "bool"),
                      ("atomic", "bool"), ("override_atomic_associativity_test", "bool")],
    "Definition": [("is_init", "bool"), ("predicate", "Expr"), ("values", "[Expr]"), ("args", "[Expr]"),
                   ("stage_schedule", "StageSchedule"), ("specializations", "[Specialization]"),
                   ("source_location", "str")],
    # the pipeline
    "BufferConstraint": [("min", "Expr"), ("extent", "Expr"), ("stride", "Expr"), ("min_estimate", "Expr"),
                         ("extent_estimate", "Expr")],
    "Parameter": [("defined", "bool"), ("is_buffer", "bool"), ("type", "Type"), ("dimensions", "int32"),
                  ("name", "str"), ("host_alignment", "int32"), ("buffer_constraints", "[BufferConstraint]"),
                  ("memory_type", "int8"), ("scalar_data", "uint64"), ("scalar_default", "Expr"),
                  ("scalar_min", "Expr"), ("scalar_max", "Expr"), ("scalar_estimate", "Expr")],
    "ExternalParameter": [("is_buffer", "bool"), ("type", "Type"), ("dimensions", "int32"), ("name", "str")],
    "ExternFuncArgument": [("arg_type", "uint8"), ("func_index", "int32"), ("buffer_name", "str"),
                           ("expr", "Expr"), ("image_param_name", "str")],
    "BufferDimension": [("min", "int32"), ("extent", "int32"), ("stride", "int32")],
    "Buffer": [("defined", "bool"), ("name", "str"), ("type", "Type"), ("dimensions", "int32"),
               ("dims", "[BufferDimension]"), ("data", "bytes")],
    "Func": [("name", "str"), ("origin_name", "str"), ("output_types", "[Type]"), ("required_types", "[Type]"),
             ("required_dims", "int32"), ("args", "[str]"), ("func_schedule", "FuncSchedule"),
             ("init_def", "Definition"), ("updates", "[Definition]"), ("debug_file", "str"),
             ("output_buffers_names", "[str]"), ("extern_arguments", "[ExternFuncArgument]"),
             ("extern_function_name", "str"), ("extern_mangling", "uint8"),
             ("extern_function_device_api", "int8"), ("extern_proxy_expr", "Expr"), ("trace_loads", "bool"),
             ("trace_stores", "bool"), ("trace_realizations", "bool"), ("trace_tags", "[str]"),
             ("no_profiling", "bool"), ("frozen", "bool")],
    "Pipeline": [("funcs", "[Func]"), ("output_names", "[str]"), ("requirements", "[Stmt]"),
                 ("func_names_in_order", "[str]"), ("parameters", "[Parameter]"),
                 ("external_parameters", "[ExternalParameter]"), ("buffers", "[Buffer]"),
                 ("halide_version", "str"), ("serialization_version", "str")],
}

#: Defaults the schema declares for fields that are absent (everything else defaults to 0/False/None).
DEFAULTS = {("Pipeline", "requirements"): []}
