"""Binding a launch to a kernel: parameter values, buffers and the symbolic thread."""

from __future__ import annotations

from fractions import Fraction

import z3

from semantics.errors import Unsupported
from semantics.ptx.ast import Kernel
from semantics.ptx.floats import f32
from semantics.ptx.machine import Buffer, Launch, Pointer, Thread, special_registers
from semantics.ptx.state import KernelContext, Precision
from semantics.ptx.types import TYPES


def param_value(param_type: str, arg: object) -> object:
    """The value a kernel parameter of PTX type `param_type` holds for one manifest argument.

    `arg` is a Buffer (a pointer to it), a Python int/float literal, or a z3 term (a symbolic scalar
    shared with the reference)."""
    ty = TYPES.get(param_type)
    if ty is None:
        raise Unsupported(f"kernel parameter of type {param_type}")
    if isinstance(arg, Buffer):
        return Pointer("global", arg.name, z3.BitVecVal(0, 64))
    if isinstance(arg, bool | int) and not ty.is_float:
        return z3.BitVecVal(int(arg) % (1 << ty.bits), ty.bits)
    if isinstance(arg, int | float):
        exact = f32(float(arg)) if ty.bits == 32 else Fraction(float(arg))
        return z3.RealVal(exact)
    if isinstance(arg, z3.ExprRef):
        return arg
    raise Unsupported(f"argument {arg!r} for a {param_type} parameter")


def bind(kernel: Kernel, launch: Launch, args: list[object], buffers: dict[str, Buffer],
         precision: Precision | None = None) -> KernelContext:
    """The shared context of one launch: every parameter bound, one symbolic thread."""
    thread = Thread.fresh("")
    params = {p.name: param_value(p.type, a) for p, a in zip(kernel.params, args, strict=True)}
    buffers = {**buffers, **shared_buffers(kernel, launch)}
    ctx = KernelContext(launch, thread, buffers, params, special_registers(thread, launch))
    if precision is not None:
        ctx.precision = precision
    return ctx


def shared_buffers(kernel: Kernel, launch: Launch) -> dict[str, Buffer]:
    """Each `.shared` variable as a per-block buffer; an unsized extern one is the launch's dynamic shared
    memory."""
    found = {}
    for var in kernel.vars:
        if var.space == ".shared":
            size = launch.dynamic_shared_bytes if var.size_bytes is None else var.size_bytes
            found[var.name] = Buffer(var.name, "uint8", size, 1, "shared")
        elif var.space == ".local":
            raise Unsupported(f"local memory (`{var.name}`)")
    return found
