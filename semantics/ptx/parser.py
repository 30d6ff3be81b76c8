"""Parse PTX text (from nvcc or Triton) into the AST of `ast.py`.

The grammar (`ptx.lark`, LALR) is generic over opcodes: an instruction is a dotted name and an operand
list, so any instruction parses and meaning is assigned elsewhere. Parsing runs in two steps:

1. `_PtxTransformer` runs inline with the LALR parser and turns each grammar rule into an AST node or a
   small intermediate record (a register declaration, a `.loc`, a nested `{ }` block, a function).
2. `_KernelBuilder` walks a function body in source order: it flattens nested blocks (renaming a block's
   register only when it would shadow an outer one, so flattening never merges two distinct registers),
   expands `%r<45>` register ranges, attaches the most recent `.loc` to each instruction, and collects
   `.shared`/`.local` variables.

Debug sections, pragmas, call prototypes and initializers are parsed (so malformed text is still
rejected) and dropped. Only `.entry` functions become `Kernel`s; `.func` bodies are parsed and checked,
then dropped.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.resources
import re
import struct
from collections import ChainMap
from collections.abc import Iterable
from dataclasses import dataclass, field

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from lark.lexer import PatternStr

from .ast import Addr, FloatImm, Instr, IntImm, Kernel, Label, Module, Operand, Param, Reg, Sym, VarDecl, Vec

__all__ = ["PtxSyntaxError", "parse_ptx"]


class PtxSyntaxError(Exception):
    """PTX text the parser rejects; the message names the line, the column and what was unexpected."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


def parse_ptx(text: str) -> Module:
    """Parse one PTX module. Raises PtxSyntaxError on text the grammar rejects."""
    try:
        return _parser().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text) from None
    except VisitError as err:  # a transformer callback failed; lark wraps it only on the tree path
        if isinstance(err.orig_exc, PtxSyntaxError):
            raise err.orig_exc from None
        raise


# ---------------------------------------------------------------------------------------------- plumbing


@functools.cache
def _parser() -> Lark:
    """Build the LALR parser once per process (grammar analysis costs far more than a parse)."""
    grammar = importlib.resources.files(__package__).joinpath("ptx.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="contextual", transformer=_PtxTransformer())


def _syntax_error(err: UnexpectedInput, text: str) -> PtxSyntaxError:
    """Turn a lark error into a PtxSyntaxError that quotes the offending line."""
    lines = text.splitlines()
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        line, column, what = max(len(lines), 1), None, "end of input"
    elif isinstance(err, UnexpectedToken):
        line, column, what = err.token.line, err.token.column, f"{str(err.token)!r}"
    elif isinstance(err, UnexpectedCharacters):
        line, column, what = err.line, err.column, f"character {err.char!r}"
    else:
        line, column, what = getattr(err, "line", None), getattr(err, "column", None), "input"
    expected = _describe_expected(getattr(err, "expected", None) or getattr(err, "allowed", None) or ())
    where = f"line {line}" + (f", column {column}" if column is not None else "")
    message = f"PTX syntax error at {where}: unexpected {what}"
    if expected:
        message += f"; expected {expected}"
    if line is not None and 1 <= line <= len(lines):
        message += f"\n    {lines[line - 1].strip()}"
    return PtxSyntaxError(message, line, column)


def _describe_expected(names: Iterable[str]) -> str:
    """Spell expected terminals the way they look in PTX (';' rather than SEMICOLON)."""
    terminals = {t.name: t for t in _parser().terminals}
    shown = []
    for name in sorted(names):
        term = terminals.get(name)
        if term is not None and isinstance(term.pattern, PatternStr):
            shown.append(repr(term.pattern.value))
        elif name != "$END":
            shown.append(_TERMINAL_WORDS.get(name, name))
    return ", ".join(sorted(set(shown))[:12])


_TERMINAL_WORDS = {
    "IDENT": "a name",
    "DOTNAME": "a .directive",
    "REG": "a register",
    "INT": "an integer",
    "HEXFLOAT": "a float literal",
    "DECFLOAT": "a float literal",
    "STRING": "a string",
    "DATA_DIR": "a .b8/.b16/.b32/.b64 data directive",
}


def _error_at(token: Token, message: str) -> PtxSyntaxError:
    """An error for a construct that parsed but that the AST cannot represent."""
    return PtxSyntaxError(
        f"PTX syntax error at line {token.line}, column {token.column}: {message}", token.line, token.column
    )


# ---------------------------------------------------------------------------------------------- literals


def _int_value(token: Token) -> int:
    """Decode a PTX integer literal: decimal, 0x hex, 0b binary, leading-0 octal, optional U suffix."""
    text = str(token).rstrip("U")
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    if text[:2] in ("0b", "0B"):
        return int(text[2:], 2)
    if len(text) > 1 and text[0] == "0":
        if not set(text) <= set("01234567"):
            raise _error_at(token, f"invalid octal literal {str(token)!r}")
        return int(text, 8)
    return int(text)


def _float_value(token: Token) -> FloatImm:
    """Decode `0f`/`0d` bit-pattern floats as written, decimal floats as float64 bits."""
    text = str(token)
    if text[:2] in ("0f", "0F"):
        return FloatImm(int(text[2:], 16), 32)
    if text[:2] in ("0d", "0D"):
        return FloatImm(int(text[2:], 16), 64)
    return FloatImm(struct.unpack("<Q", struct.pack("<d", float(text)))[0], 64)


def _string_value(token: Token) -> str:
    """Strip the quotes of a PTX string literal and undo backslash escapes of `"` and `\\`."""
    return re.sub(r"\\(.)", r"\1", str(token)[1:-1])


_ELEMENT_BITS = re.compile(r"\.(?:[bsuf]|bf)(\d+)(?:x(\d+))?")
_FP8_TYPES = re.compile(r"\.e[45]m[23](?:x(\d+))?")


def _type_bytes(type_: str) -> int | None:
    """Bytes of one element of a declared type such as '.b8', '.f16x2' or '.v4.f32'; None if unknown."""
    lanes = 1
    vector = re.match(r"\.v(\d+)(\..*)", type_)
    if vector:
        lanes, type_ = int(vector.group(1)), vector.group(2)
    if m := _ELEMENT_BITS.fullmatch(type_):
        bits = int(m.group(1)) * int(m.group(2) or 1)
    elif m := _FP8_TYPES.fullmatch(type_):
        bits = 8 * int(m.group(1) or 1)
    else:
        return None
    return lanes * bits // 8


# ---------------------------------------------------------------------------------------------- records

_STATE_SPACES = frozenset({".global", ".const", ".shared", ".local", ".param"})
_VECTOR = re.compile(r"\.v\d+")
_SKIP = object()  # what a rule returns when its text carries nothing the AST keeps


@dataclass(frozen=True)
class _Align:
    value: int


@dataclass(frozen=True)
class _Ptr:
    pass


@dataclass(frozen=True)
class _Dims:
    sizes: tuple[int | None, ...]


@dataclass(frozen=True)
class _RegDecl:
    type: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class _Loc:
    file: int
    line: int


@dataclass(frozen=True)
class _Block:
    items: tuple[object, ...]


@dataclass(frozen=True)
class _Body:
    items: tuple[object, ...]


@dataclass(frozen=True)
class _Params:
    params: tuple[Param, ...]


@dataclass(frozen=True)
class _Guard:
    name: str
    negated: bool


@dataclass(frozen=True)
class _Function:
    kind: str  # 'entry' or 'func'
    name: Token
    params: tuple[Param, ...]
    directives: dict[str, tuple[int, ...]]
    body: tuple[object, ...] | None  # None for a declaration without a body


def _split_attrs(attrs: list[object]) -> tuple[str, int | None, bool]:
    """Read declaration attributes: (type incl. any `.vN` prefix, alignment, whether `.ptr` was given).

    State spaces among them (`.param .u64 .ptr .global ...`) say where a pointer points and are dropped."""
    align, is_ptr, vector, type_ = None, False, "", ""
    for attr in attrs:
        if isinstance(attr, _Align):
            align = attr.value
        elif isinstance(attr, _Ptr):
            is_ptr = True
        elif isinstance(attr, str) and _VECTOR.fullmatch(attr):
            vector = attr
        elif isinstance(attr, str) and attr not in _STATE_SPACES:
            type_ = attr
    return vector + type_, align, is_ptr


# ---------------------------------------------------------------------------------------------- transformer


@v_args(inline=True)
class _PtxTransformer(Transformer):
    """Rule callbacks run by the LALR parser; each returns an AST node, a record above, or _SKIP."""

    # ---- module header

    def version(self, tok: Token) -> tuple[str, str]:
        return ("version", str(tok))

    def target(self, *targets: Token) -> tuple[str, str]:
        """Keep the architecture (`sm_90a`); extra entries such as `debug` are options, not targets."""
        return ("target", str(targets[0]))

    def address_size(self, tok: Token) -> tuple[str, int]:
        return ("address_size", _int_value(tok))

    def file(self, index: Token, path: Token, *_sizes: Token) -> tuple[str, int, str]:
        return ("file", _int_value(index), _string_value(path))

    def section(self, *_items: object) -> object:
        return _SKIP

    def pragma(self, *_strings: Token) -> object:
        return _SKIP

    # ---- declarations

    def linkage(self, tok: Token) -> str:
        return str(tok)

    def space(self, tok: Token) -> str:
        return str(tok)

    def align_attr(self, tok: Token) -> _Align:
        return _Align(_int_value(tok))

    def ptr_attr(self) -> _Ptr:
        return _Ptr()

    def attribute_attr(self, *_names: Token) -> object:
        """`.attribute(.managed)` says how the host maps the variable; no effect on kernel semantics."""
        return _SKIP

    def plain_attr(self, tok: Token) -> str:
        return str(tok)

    def sized_dim(self, tok: Token) -> int:
        return _int_value(tok)

    def unsized_dim(self) -> None:
        return None

    def dims(self, *sizes: int | None) -> _Dims:
        return _Dims(sizes)

    def initializer(self, *_values: object) -> object:
        """Initial values of `.global`/`.const` data do not matter to a kernel's effects; dropped."""
        return _SKIP

    def var_decl(self, space: str, *rest: object) -> VarDecl:
        """`.shared .align 4 .b8 name[512]`: size is element size times the array length, None if `[]`."""
        rest_list = [r for r in rest if r is not _SKIP]
        dims = rest_list.pop() if rest_list and isinstance(rest_list[-1], _Dims) else _Dims(())
        name = rest_list.pop()
        type_, align, _ = _split_attrs(rest_list)
        size = _type_bytes(type_)
        for n in dims.sizes:
            size = None if size is None or n is None else size * n
        return VarDecl(name=str(name), space=space, type=type_, align=align, size_bytes=size)

    def module_decl(self, *args: object) -> object:
        return self._with_linkage(args)

    def body_decl(self, *args: object) -> object:
        return self._with_linkage(args)

    @staticmethod
    def _with_linkage(args: tuple[object, ...]) -> object:
        """Apply `.extern` (and ignore `.visible`/`.weak`) on the declaration that follows the linkage."""
        *linkages, decl = args
        if isinstance(decl, VarDecl) and ".extern" in linkages:
            return dataclasses.replace(decl, extern=True)
        return decl

    def param(self, *args: object) -> Param:
        """`.param .u64 .ptr .global .align 1 name`: type '.u64', is_ptr True, align 1."""
        items = list(args)
        if items and isinstance(items[-1], _Dims):
            items.pop()
        name = items.pop()
        type_, align, is_ptr = _split_attrs(items)
        return Param(name=str(name), type=type_, is_ptr=is_ptr, align=align)

    def param_list(self, *params: Param) -> _Params:
        return _Params(params)

    def ret_list(self, *params: Param) -> object:
        return _SKIP

    def perf(self, name: Token, *values: Token) -> tuple[str, tuple[int, ...]]:
        return (str(name), tuple(_int_value(v) for v in values))

    def perf_pragma(self, _pragma: object) -> object:
        return _SKIP

    def entry(self, name: Token, *rest: object) -> _Function:
        return self._function("entry", name, rest)

    def func(self, *args: object) -> _Function:
        rest = [a for a in args if a is not _SKIP]  # the return-value list
        return self._function("func", rest[0], rest[1:])  # type: ignore[arg-type]

    @staticmethod
    def _function(kind: str, name: Token, rest: tuple[object, ...] | list[object]) -> _Function:
        params: tuple[Param, ...] = ()
        directives: dict[str, tuple[int, ...]] = {}
        body = None
        for item in rest:
            if isinstance(item, _Params):
                params = item.params
            elif isinstance(item, tuple):
                directives[item[0]] = item[1]
            elif isinstance(item, _Body):
                body = item.items
        return _Function(kind, name, params, directives, body)

    # ---- function bodies

    def body(self, *stmts: object) -> _Body:
        return _Body(tuple(s for s in stmts if s is not _SKIP))

    def block(self, *stmts: object) -> _Block:
        return _Block(tuple(s for s in stmts if s is not _SKIP))

    def label(self, tok: Token) -> Label:
        return Label(str(tok), tok.line)

    def reg_decl(self, *args: object) -> _RegDecl:
        """`.reg .b32 %r<45>;` declares %r0 .. %r44; `.reg .pred p, q;` declares p and q."""
        types = [str(a) for a in args if isinstance(a, Token)]
        names = tuple(n for a in args if isinstance(a, tuple) for n in a)
        return _RegDecl("".join(types), names)

    def reg_item(self, name: Token, count: Token | None = None) -> tuple[str, ...]:
        if count is None:
            return (str(name),)
        return tuple(f"{name}{i}" for i in range(_int_value(count)))

    def loc(self, file: Token, line: Token, *_rest: Token) -> _Loc:
        return _Loc(_int_value(file), _int_value(line))

    def prototype(self, *_args: object) -> object:
        return _SKIP

    def targets(self, *_args: object) -> object:
        return _SKIP

    def instr(self, *args: object) -> Instr:
        """`@!%p1 ld.global.nc.f32 %f1, [%rd1];` -> opcode 'ld', mods ('.global', '.nc', '.f32')."""
        guard = args[0] if isinstance(args[0], _Guard) else None
        name: Token = args[1] if guard else args[0]  # type: ignore[assignment]
        operands = args[2:] if guard else args[1:]
        opcode, *mods = str(name).split(".")
        pred = (guard.name, guard.negated) if guard else None
        return Instr(opcode, tuple("." + m for m in mods), operands, pred, name.line)  # type: ignore[arg-type]

    def guard(self, tok: Token) -> _Guard:
        return _Guard(str(tok), False)

    def neg_guard(self, tok: Token) -> _Guard:
        return _Guard(str(tok), True)

    # ---- operands

    def reg(self, tok: Token) -> Reg:
        return Reg(str(tok))

    def reg_pair(self, first: Token, second: Token) -> Vec:
        """`%r1|%p1` (shfl, setp with two destinations) becomes a two-element vector."""
        return Vec((Reg(str(first)), Reg(str(second))))

    def not_operand(self, tok: Token) -> Operand:
        raise _error_at(tok, f"negated predicate operand '!{tok}' is not supported")

    def int_imm(self, tok: Token) -> IntImm:
        return IntImm(_int_value(tok))

    def neg_int_imm(self, tok: Token) -> IntImm:
        return IntImm(-_int_value(tok))

    def float_imm(self, tok: Token) -> FloatImm:
        return _float_value(tok)

    def neg_float_imm(self, tok: Token) -> FloatImm:
        """`-0f3F800000` is the same pattern with the sign bit flipped."""
        value = _float_value(tok)
        return FloatImm(value.bits ^ (1 << (value.width - 1)), value.width)

    def sym(self, tok: Token) -> Sym:
        return Sym(str(tok))

    def address(self, base: Token, *offsets: int) -> Addr:
        """`[%rd1+-4]`, `[ %rd1 + 0 ]`, `[name_param_0]`: offsets are summed."""
        return Addr(Reg(str(base)) if base.type == "REG" else Sym(str(base)), sum(offsets))

    def tensor_address(self, base: Token, *coords: Operand) -> Vec:
        """`[tex, {%f1, %f2}]` / `[%rd1, {%r2, %r3}]` (texture and tensor-map accesses) have no Addr form;
        kept as a Vec whose first element is the Addr of the handle, so no consumer mistakes it for a
        plain memory operand."""
        return Vec((self.address(base), *coords))

    def plus_offset(self, tok: Token) -> int:
        return _int_value(tok)

    def minus_offset(self, tok: Token) -> int:
        return -_int_value(tok)

    def vector(self, *elems: Operand) -> Vec:
        return Vec(tuple(elems))

    def arg_list(self, *elems: Operand) -> Vec:
        """`call` argument and return lists `(param0, param1)` are kept as vectors."""
        return Vec(tuple(elems))

    # ---- the module

    def start(self, *items: object) -> Module:
        return _build_module(items)


# ---------------------------------------------------------------------------------------------- assembly


def _build_module(items: tuple[object, ...]) -> Module:
    """Collect the header, variables, `.file` table and kernels (`.entry` definitions) of a module.

    Defaults where a header line is missing: version '' and target '', address size 32 (the PTX default)."""
    module = Module(version="", target="", address_size=32, kernels={})
    for item in items:
        if isinstance(item, tuple) and item[0] == "file":
            module.files[item[1]] = item[2]
        elif isinstance(item, tuple):
            setattr(module, item[0], item[1])  # version, target, address_size
        elif isinstance(item, VarDecl):
            module.vars.append(item)
        elif isinstance(item, _Function) and item.body is not None:
            kernel = _KernelBuilder.build(item)
            if item.kind != "entry":
                continue  # device functions are parsed and checked, but the AST has no place for them
            if kernel.name in module.kernels:
                raise _error_at(item.name, f"kernel {kernel.name!r} is defined twice")
            module.kernels[kernel.name] = kernel
    return module


@dataclass
class _KernelBuilder:
    """Flattens one function body in source order into a Kernel (see the module docstring)."""

    kernel: Kernel
    loc: tuple[int, int] | None = None
    labels: set[str] = field(default_factory=set)

    @classmethod
    def build(cls, fn: _Function) -> Kernel:
        builder = cls(Kernel(name=str(fn.name), params=list(fn.params), body=[], directives=fn.directives))
        builder.add_block(fn.body or (), ChainMap(), top=True)
        return builder.kernel

    def add_block(self, items: tuple[object, ...], scope: ChainMap[str, str], top: bool) -> None:
        """Declare a block's registers first (a `.reg` may follow its first use), then walk it in order."""
        for item in items:
            if isinstance(item, _RegDecl):
                self.declare(item, scope, top)
        for item in items:
            if isinstance(item, _Block):
                self.add_block(item.items, scope.new_child(), top=False)
            elif isinstance(item, _Loc):
                self.loc = (item.file, item.line)
            elif isinstance(item, VarDecl):
                if item.space != ".param":  # call-sequence parameters are not kernel state
                    self.kernel.vars.append(item)
            elif isinstance(item, Label):
                self.add_label(item)
            elif isinstance(item, Instr):
                self.kernel.body.append(self.resolve_instr(item, scope))

    def declare(self, decl: _RegDecl, scope: ChainMap[str, str], top: bool) -> None:
        """Record registers; a nested block's register that would shadow one in an enclosing block, or
        reuse a name with another type, gets a fresh name `name$N` so that flattening keeps it distinct."""
        regs = self.kernel.regs
        for name in decl.names:
            actual = name
            if not top and (name in scope or regs.get(name, decl.type) != decl.type):
                n = 1
                while f"{name}${n}" in regs:
                    n += 1
                actual = f"{name}${n}"
            scope.maps[0][name] = actual
            regs[actual] = decl.type

    def add_label(self, label: Label) -> None:
        """Labels are kept as written, so the same label twice in one kernel is rejected, not merged."""
        if label.name in self.labels:
            raise PtxSyntaxError(
                f"PTX syntax error at line {label.line}: label {label.name!r} is defined twice "
                f"in {self.kernel.name!r}",
                label.line,
            )
        self.labels.add(label.name)
        self.kernel.body.append(label)

    def resolve_instr(self, instr: Instr, scope: ChainMap[str, str]) -> Instr:
        pred = instr.pred and (scope.get(instr.pred[0], instr.pred[0]), instr.pred[1])
        operands = tuple(_resolve(op, scope) for op in instr.operands)
        return dataclasses.replace(instr, operands=operands, pred=pred, loc=self.loc)


def _resolve(op: Operand, scope: ChainMap[str, str]) -> Operand:
    """Map a register operand to its (possibly renamed) declaration; a bare name that is a declared
    register (`.reg .pred p;` then `p`) becomes a Reg rather than a Sym."""
    if isinstance(op, Reg):
        return Reg(scope.get(op.name, op.name))
    if isinstance(op, Sym):
        return Reg(scope[op.name]) if op.name in scope else op
    if isinstance(op, Addr):
        return Addr(_resolve(op.base, scope), op.offset)  # type: ignore[arg-type]
    if isinstance(op, Vec):
        return Vec(tuple(_resolve(e, scope) for e in op.elems))
    return op
