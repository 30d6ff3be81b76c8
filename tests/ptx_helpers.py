"""Running PTX snippets on concrete register values through the real instruction table."""

from __future__ import annotations

import z3

from semantics.ptx.ast import Instr, Reg
from semantics.ptx.instructions import ALU
from semantics.ptx.machine import Launch, Thread, special_registers
from semantics.ptx.parser import parse_ptx
from semantics.ptx.state import KernelContext, ThreadState
from semantics.ptx.types import TYPES

HEADER = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry t()\n{\n"


def instructions(body: str) -> list[Instr]:
    kernel = parse_ptx(HEADER + body + "\nret;\n}\n").kernels["t"]
    return [i for i in kernel.body if isinstance(i, Instr) and i.opcode != "ret"]


def run_alu(body: str, regs: dict[str, z3.ExprRef]) -> ThreadState:
    """Execute straight-line ALU instructions from `body` with `regs` preset; returns the final state."""
    launch = Launch((1, 1, 1), (1, 1, 1))
    thread = Thread.fresh("")
    ctx = KernelContext(launch, thread, {}, {}, special_registers(thread, launch))
    state = ThreadState(ctx, dict(regs))
    for ins in instructions(body):
        if ins.pred:
            guard = state.read(Reg(ins.pred[0]), TYPES[".pred"])
            state.guard_pred = z3.Not(guard) if ins.pred[1] else guard
        ALU[ins.opcode](state, ins)
        state.guard_pred = None
    return state


def value(state: ThreadState, reg: str) -> object:
    v = z3.simplify(state.regs[reg])
    if z3.is_bv_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        return v.as_fraction()
    if z3.is_true(v) or z3.is_false(v):
        return z3.is_true(v)
    return v
