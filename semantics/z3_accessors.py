"""z3's pure accessors called without their error check: a fifth to a third of a verification's time.

z3's Python API wraps every C function in a Python function that calls it and then asks the context for an
error code (`Elementaries.Check`: a second Python call and a second C call). For the accessors a term walk
calls millions of times (the kind, id, arguments and sort of an AST, reference counting), that wrapping was
21-31% of `lark verify`'s wall time (cold: triton_row_sum_loop 62.8 s -> 49.4 s, shared_block_max 53.8 s ->
37.0 s). Each name in ACCESSORS is rebound, in z3's own modules, to the ctypes function its wrapper calls.

Why this is sound: an accessor only reads an AST the caller already holds; on a valid one it cannot fail, and
z3's Python layer checks its arguments before the call (`arg(i)` asserts `i < num_args()`). Every z3 API call
resets the error code first, so an unchecked call leaves no stale error behind. Nothing that builds terms,
solves or simplifies is touched: those keep their checks. The rebinding only takes a wrapper of the exact
plain form (call, check, return the result unchanged, or nothing); a wrapper that converts its result (a string
accessor) or a z3 release that changes the form is left as it is (`unchecked` says which were taken).
"""

from __future__ import annotations

import inspect
import re
import sys

import z3  # noqa: F401  (loads z3.z3core and z3.z3, whose names are rebound)

ACCESSORS = (
    "Z3_get_ast_kind", "Z3_get_ast_id", "Z3_get_app_arg", "Z3_get_app_num_args", "Z3_inc_ref", "Z3_dec_ref",
    "Z3_get_sort", "Z3_get_sort_kind", "Z3_is_finite_set_sort", "Z3_get_app_decl", "Z3_get_decl_kind",
    "Z3_func_decl_to_ast", "Z3_is_eq_ast", "Z3_is_algebraic_number", "Z3_get_symbol_kind", "Z3_get_decl_name",
    "Z3_get_decl_num_parameters", "Z3_sort_to_ast", "Z3_get_decl_parameter_kind", "Z3_is_numeral_ast",
    "Z3_get_domain", "Z3_get_bv_sort_size", "Z3_get_decl_int_parameter", "Z3_get_quantifier_body",
    "Z3_is_eq_sort",
)
_CALL = r"_elems\.f\((?:a\d+(?:, )?)*\)\n\s*"
_CHECK = r"_elems\.Check\(a0\)"
_PLAIN = re.compile(rf"\):\n\s*(?:r = {_CALL}(?:{_CHECK}\n\s*)?return r|{_CALL}(?:{_CHECK})?)\s*$")
_MODULES = ("z3", "z3.z3", "z3.z3core", "z3.z3printer")


def _raw(wrapper: object) -> object | None:
    """The ctypes function a plain checked wrapper calls, or None where the wrapper does more."""
    try:
        plain = _PLAIN.search(inspect.getsource(wrapper)) is not None
    except (OSError, TypeError):
        return None
    elems = (getattr(wrapper, "__defaults__", None) or (None,))[-1]
    return getattr(elems, "f", None) if plain else None


def _rebind() -> tuple[str, ...]:
    core = sys.modules["z3.z3core"]
    taken = []
    for name in ACCESSORS:
        wrapper = getattr(core, name, None)
        raw = _raw(wrapper) if wrapper is not None else None
        if raw is None:
            continue
        for module in (sys.modules[m] for m in _MODULES if m in sys.modules):
            if getattr(module, name, None) is wrapper:
                setattr(module, name, raw)
        taken.append(name)
    return tuple(taken)


unchecked: tuple[str, ...] = _rebind()
