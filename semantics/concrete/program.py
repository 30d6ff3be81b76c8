"""A kernel decoded once into a list of steps: each instruction a closure `step(thread) -> next pc`.

Branches return their target's index, `ret`/`exit` return EXIT, and the instructions through which threads
meet (block barriers and warp-synchronous instructions) return WAIT after saving their own index: the
scheduler (`run.py`) then runs them for the whole block or warp. An instruction outside the interpreter's
fragment decodes to a step that raises `Unsupported` when (and only when) a thread reaches it.
"""

from __future__ import annotations

from collections.abc import Callable

from semantics.errors import Unsupported
from semantics.ptx.ast import Instr, IntImm, Kernel, Label, Reg, Sym
from semantics.ptx.idioms import rewrite_idioms

from .access import MEMORY
from .alu import ALU
from .operands import Registers
from .warp import WARP, warp_barrier

EXIT, WAIT = -1, -2
NO_EFFECT = frozenset({"pragma", ".pragma", "fence", "membar"})
BARRIER_MODIFIERS = frozenset({".sync", ".aligned", ".cta"})
INTERACTING = frozenset({"bar", "barrier", "atom", "red", "match", *WARP})

Step = Callable[[object], int]


class Program:
    """The decoded kernel. `collectives[i]` is ('barrier', None) or ('warp', run) for a meeting instruction
    at index i; `interacting` says why threads of a block are not independent (None when they are)."""

    def __init__(self, kernel: Kernel, params: dict[str, object], memory, variables: dict[str, str]):
        kernel, _ = rewrite_idioms(kernel)   # nvcc libm sequences -> lark.ideal pseudo-instructions
        self.kernel = kernel
        self.regs = Registers(kernel.regs)
        self.params = params
        self.memory = memory
        self.variables = variables
        instrs: list[Instr] = []
        self.labels: dict[str, int] = {}   # label -> index of the instruction after it
        for item in kernel.body:
            if isinstance(item, Label):
                self.labels[item.name] = len(instrs)
            elif item.opcode not in NO_EFFECT:
                instrs.append(item)
        self.lines = [ins.line for ins in instrs] + [0]
        self.collectives: dict[int, tuple[str, Callable | None]] = {}
        self.code: list[Step] = [self._decode(ins, i) for i, ins in enumerate(instrs)]
        self.code.append(lambda t: EXIT)   # falling off the end of the body
        uses_shared = any(space == "shared" for space in variables.values())
        meeting = next((ins for ins in instrs if ins.opcode in INTERACTING), None)
        self.interacting = "shared memory" if uses_shared else \
            f"`{meeting.opcode}` at line {meeting.line}" if meeting else None

    def _decode(self, ins: Instr, i: int) -> Step:
        try:
            step = self._meaning(ins, i)
            return _guarded(self, ins, step, i + 1) if ins.pred is not None else step
        except Unsupported as exc:
            return _refuse(exc.feature, exc.where or f"line {ins.line}")
        except (ValueError, TypeError) as exc:
            return _refuse(f"`{ins.opcode}{''.join(ins.mods)}` with these operands ({exc})", f"line {ins.line}")

    def _meaning(self, ins: Instr, i: int) -> Step:
        nxt = i + 1
        if ins.opcode == "bra":
            (target,) = ins.operands
            if not isinstance(target, Sym) or target.name not in self.labels:
                raise Unsupported(f"branch to `{target}`")
            dest = self.labels[target.name]
            return lambda t: dest
        if ins.opcode in ("ret", "exit"):
            return lambda t: EXIT
        if ins.opcode in ("bar", "barrier"):
            return self._barrier(ins, i)
        if ins.opcode in WARP:
            return self._collective(i, "warp", WARP[ins.opcode](self, ins))
        decoder = ALU.get(ins.opcode) or MEMORY.get(ins.opcode)
        if decoder is None:
            raise Unsupported(f"instruction `{ins.opcode}{''.join(ins.mods)}`")
        return decoder(self, ins, nxt)

    def _barrier(self, ins: Instr, i: int) -> Step:
        """bar.sync / barrier.sync [.aligned] with a barrier number and no thread count: the whole block meets;
        bar.warp.sync: the lanes of its mask meet."""
        if ins.opcode == "bar" and ins.mods[:1] == (".warp",) and ins.mods[1:] == (".sync",):
            return self._collective(i, "warp", warp_barrier(self, ins))
        if (ins.opcode == "bar" and ".sync" not in ins.mods) or set(ins.mods) - BARRIER_MODIFIERS:
            raise Unsupported(f"barrier `{ins.opcode}{''.join(ins.mods)}`")
        if len(ins.operands) != 1 or not isinstance(ins.operands[0], IntImm):
            raise Unsupported("a barrier with a thread count or a register barrier number")
        return self._collective(i, "barrier", None)

    def _collective(self, i: int, kind: str, run: Callable | None) -> Step:
        self.collectives[i] = (kind, run)

        def wait(t) -> int:
            t.pc = i
            return WAIT
        return wait


def _refuse(feature: str, where: str) -> Step:
    def step(t) -> int:
        raise Unsupported(feature, where)
    return step


def _guarded(p: Program, ins: Instr, step: Step, nxt: int) -> Step:
    """`@%p ins` / `@!%p ins`: the instruction runs where the predicate holds; it must be defined."""
    name, negated = ins.pred
    p.regs.width(Reg(name))

    def guarded(t) -> int:
        v = t.regs[name]
        if v is True:
            return nxt if negated else step(t)
        if v is False:
            return step(t) if negated else nxt
        raise Unsupported(f"guard `{name}` holds {type(v).__name__}, not a predicate")
    return guarded
