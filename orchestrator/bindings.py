"""Launch arguments against the compiled kernel's PTX parameters (DESIGN §2.1): the intake checks that need
the compiled kernel, and so run after the frontend rather than in `orchestrator.manifest`.

Each argument (a tensor name, a scalar input's name, or a literal) must fit the parameter it lands in; a
mismatch is an `IntakeError` naming `launch.args[i]`, the parameter and what it would need, in words.
"""

from __future__ import annotations

from orchestrator.manifest import NULL, IntakeError, Task, show_value

# PTX parameter type -> (family, width). Family 'u'/'s' are unsigned/signed integers, 'b' untyped bits,
# 'f' floating point.
PTX_PARAM_TYPES: dict[str, tuple[str, int]] = {
    f".{family}{width}": (family, width)
    for family, widths in (("u", (8, 16, 32, 64)), ("s", (8, 16, 32, 64)), ("b", (8, 16, 32, 64)),
                           ("f", (16, 32, 64)))
    for width in widths
}
# kind of argument -> (parameter families it accepts, what it needs, in words). Tensors also need 64 bits.
ACCEPTS: dict[str, tuple[tuple[str, ...], str]] = {
    "tensor": (("u", "s", "b"), "a 64-bit pointer parameter (.u64/.s64/.b64)"),
    "null": (("u", "s", "b"), "a 64-bit pointer parameter (.u64/.s64/.b64)"),
    "int": (("u", "s", "b"), "an integer parameter"),
    "float": (("f", "b"), "a floating-point parameter (.f32/.f64)"),
}


def _int_range(family: str, width: int) -> tuple[int, int]:
    """Values a literal may take for an integer parameter: signed, unsigned, or either for .b types."""
    low = -(2 ** (width - 1)) if family in ("s", "b") else 0
    high = 2**width - 1 if family in ("u", "b") else 2 ** (width - 1) - 1
    return low, high


def _arg_kind(arg: str | int | float, bound_kinds: dict[str, str], where: str) -> tuple[str, str]:
    """(kind, what the user sees) for one argument: kind is 'tensor', 'null', 'int' or 'float'."""
    if isinstance(arg, bool) or not isinstance(arg, str | int | float):
        raise IntakeError(where, f"{show_value(arg)} is neither a name nor a number")
    if isinstance(arg, int):
        return "int", f"the integer literal {arg}"
    if isinstance(arg, float):
        return "float", f"the float literal {arg}"
    if arg == NULL:
        return "null", '"null" (the null pointer)'
    kind = bound_kinds.get(arg)
    if kind is None:
        raise IntakeError(where, f'no binding is known for "{arg}"')
    head, _, detail = kind.partition(":")
    if head == "tensor":
        return "tensor", f'"{arg}" (a {detail} tensor)'
    if head == "scalar" and detail in ("int", "float"):
        return detail, f'"{arg}" (a scalar {detail} input)'
    raise IntakeError(where, f'unknown binding kind "{kind}" for "{arg}"')


def _mismatch(arg: str | int | float, kind: str, family: str, width: int) -> str | None:
    """Why this argument cannot go into a parameter of this type, or None when it can."""
    families, need = ACCEPTS[kind]
    if family not in families or kind in ("tensor", "null") and width != 64:
        return need
    if kind == "int" and isinstance(arg, int):
        low, high = _int_range(family, width)
        if not low <= arg <= high:
            return f"a parameter wide enough for it (.{family}{width} holds {low}..{high})"
    return None


# Triton pointer type -> the torch dtype of the tensor it points into.
TRITON_POINTEE: dict[str, str] = {
    "*fp64": "float64", "*fp32": "float32", "*fp16": "float16", "*bf16": "bfloat16", "*i64": "int64",
    "*i32": "int32", "*i16": "int16", "*i8": "int8", "*u64": "uint64", "*u32": "uint32", "*u16": "uint16",
    "*u8": "uint8", "*i1": "bool",
}


def _dtype_mismatch(kind: str, shown: str, declared: str | None) -> str | None:
    """Why a tensor does not fit the pointer type the kernel's source declares for it, or None."""
    pointee = TRITON_POINTEE.get(declared or "")
    dtype = kind.partition(":")[2]
    if pointee is None or not kind.startswith("tensor:") or dtype == pointee:
        return None
    return f'{shown} is bound to a parameter declared "{declared}" (a {pointee} pointer) in kernel.signature'


def check_bindings(task: Task, params: list[tuple[str, str, bool]], bound_kinds: dict[str, str],
                   declared: tuple[str, ...] | None = None) -> None:
    """Check launch.args against the compiled kernel's PTX parameters; raise IntakeError on a mismatch.

    `params` is the entry's parameter list as (name, PTX type such as '.u64', is_pointer); `bound_kinds`
    maps each name in launch.args to 'tensor:<dtype>', 'scalar:int' or 'scalar:float'; `declared`, where the
    source types its parameters (Triton), their types in order: a tensor of another dtype is bad input (the
    kernel would read its bytes as another type). This lives apart from `load_task` because only the
    compiled kernel knows its parameters.
    """
    args = task.launch.args
    if len(args) != len(params):
        raise IntakeError(
            "launch.args",
            f"kernel {task.kernel.entry} has {len(params)} parameters, manifest gives {len(args)} arguments",
        )
    for i, (arg, (pname, ptype, is_pointer)) in enumerate(zip(args, params, strict=True)):
        where = f"launch.args[{i}]"
        kind, shown = _arg_kind(arg, bound_kinds, where)
        family, width = PTX_PARAM_TYPES.get(ptype, ("?", 0))
        if family == "?":
            raise IntakeError(where, f"parameter {i} ({pname}) has PTX type {ptype}, which LARK cannot bind")
        wrong_dtype = _dtype_mismatch(bound_kinds.get(arg, "") if isinstance(arg, str) else "", shown,
                                      declared[i] if declared and i < len(declared) else None)
        if wrong_dtype:
            raise IntakeError(where, f"{wrong_dtype} (parameter {i}, {pname})")
        need = _mismatch(arg, kind, family, width)
        if need:
            pointer = " pointer" if is_pointer else ""
            literal_int = isinstance(arg, int) and family == "f"
            hint = f" (write {float(arg)} for a float)" if literal_int else ""
            raise IntakeError(
                where, f"{shown} needs {need}, but parameter {i} ({pname}) is {ptype}{pointer}{hint}"
            )
