"""Mutation operators: each one finds its sites in a kernel's source and says how to rewrite each.

A mutant is one `Edit` applied to a correct example. The operators are the bugs people (and code
generators) write: a barrier left out, an index off by one, two index terms swapped, a wrong constant, a
guard or mask dropped, an atomic made plain, a comparison flipped, a computation narrowed to half
precision. CUDA and Triton are mutated at the source level (the frontend then compiles the mutant, as it
would a user's kernel); hand-written PTX at the instruction level. An operator that does not apply to a
language has no row for it in `OPERATORS`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from bench.mutation.text import Source, call_arguments, closing, top_level_splits

HALF_HEADER = "#include <cuda_fp16.h>\n"
MAX_SWAPS_PER_SPAN = 4
NOT_INDEX_ATOMS = {"int", "long", "float", "unsigned", "const", "tl", "if", "for", "return", "axis", "mask",
                   "other", "dtype", "range", "float32", "float16", "True", "False", "None", "f"}


@dataclass(frozen=True)
class Edit:
    """Replace text[start:end] by `text`; `header` goes before the whole source (an #include)."""

    start: int
    end: int
    text: str
    header: str = ""


def apply(source: str, edit: Edit) -> str:
    return edit.header + source[:edit.start] + edit.text + source[edit.end:]


# ---------------------------------------------------------------------------------------------------------
# Operators shared by the languages (the pattern differs, the rewrite does not)
# ---------------------------------------------------------------------------------------------------------

BARRIER = {"cuda": re.compile(r"__syncthreads\(\)\s*;|__syncwarp\(\)\s*;"),
           "triton": re.compile(r"tl\.debug_barrier\(\)"),
           "ptx": re.compile(r"^\s*(bar|barrier)\.sync[^;]*;", re.M)}
COMPARISON = re.compile(r"(?<![<>=!\-])(<=|>=|==|!=|<|>)(?![<>=])")
FLIPS = {"<": ["<=", ">="], "<=": ["<", ">"], ">": [">=", "<="], ">=": [">", "<"], "==": ["!="], "!=": ["=="]}
INT_LITERAL = re.compile(r"(?<![\w.])\d+(?![\w.])")
FLOAT_LITERAL = re.compile(r"(?<![\w.])(\d+\.\d*|\d*\.\d+|\d+(?=e))(e[-+]?\d+)?(f?)(?![\w.])")


def drop_barrier(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(BARRIER[src.language]):
        yield Edit(*m.span(), "")


def flip_comparison(src: Source) -> Iterator[Edit]:
    if src.language == "ptx":
        yield from _flip_setp(src)
        return
    for m in src.code_matches(COMPARISON):
        for flipped in FLIPS[m.group(1)]:
            yield Edit(*m.span(), flipped)


def change_constant(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(INT_LITERAL):
        n = int(m.group())
        for other in ({n + 1, n - 1} - {-1}):
            yield Edit(*m.span(), str(other))
    for m in src.code_matches(FLOAT_LITERAL):
        value = float(m.group(1) + (m.group(2) or ""))
        yield Edit(*m.span(), repr(value * 2 if value else 1.0) + m.group(3))


def _shifts(start: int, end: int, text: str) -> Iterator[Edit]:
    yield Edit(start, end, f"({text}) + 1")
    yield Edit(start, end, f"({text}) - 1")


def _swap_atoms(src: Source, start: int, end: int) -> Iterator[Edit]:
    """Swap the first occurrences of two distinct identifiers inside text[start:end]."""
    atoms: dict[str, tuple[int, int]] = {}
    for m in ATOM.finditer(src.text, start, end):
        name = m.group()
        follows = src.text[m.end():m.end() + 2].lstrip()
        if name in NOT_INDEX_ATOMS or follows.startswith("(") or (follows.startswith("=") and "==" not in follows):
            continue
        atoms.setdefault(name, (m.start(), m.end()))
    spans = sorted(atoms.values())
    pairs = [(a, b) for i, a in enumerate(spans) for b in spans[i + 1:]][:MAX_SWAPS_PER_SPAN]
    for (a0, a1), (b0, b1) in pairs:
        text = src.text[a0:b1]
        first, second = src.text[a0:a1], src.text[b0:b1]
        yield Edit(a0, b1, second + text[a1 - a0:b0 - a0] + first)


ATOM = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[xyz]\b)?")


# ---------------------------------------------------------------------------------------------------------
# CUDA C++
# ---------------------------------------------------------------------------------------------------------

SUBSCRIPT = re.compile(r"(?<=[\w\]])\s*\[")
IF_OR_TERNARY = re.compile(r"\bif\s*\(|\((?=[^()]*\)\s*\?)")
INDEX_DECL = re.compile(r"\b(?:int|long long|unsigned)\s+\w+\s*=\s*([^;,]+)[;,]")
ATOMIC = re.compile(r"\batomic(Add|Max|Min)\s*\(")
ASSIGNMENT = re.compile(r"(?<![=!<>+\-*/])(\+=|\*=|=)(?!=)\s*([^;{}\n]+);")
PLAIN_ATOMIC = {"Add": "(*({p}) += ({v}))", "Max": "(*({p}) = fmaxf(*({p}), ({v})))",
                "Min": "(*({p}) = fminf(*({p}), ({v})))"}


def _subscripts(src: Source) -> Iterator[tuple[int, int]]:
    for m in src.code_matches(SUBSCRIPT):
        close = closing(src.text, m.end() - 1)
        if close > m.end():
            yield m.end(), close


def cuda_shift_index(src: Source) -> Iterator[Edit]:
    for start, end in _subscripts(src):
        yield from _shifts(start, end, src.text[start:end])


def cuda_swap_index_terms(src: Source) -> Iterator[Edit]:
    spans = list(_subscripts(src)) + [m.span(1) for m in src.code_matches(INDEX_DECL)]
    for start, end in spans:
        yield from _swap_atoms(src, start, end)


def cuda_drop_guard(src: Source) -> Iterator[Edit]:
    """An `if` or `?:` condition becomes true, or loses one of its `&&` conjuncts."""
    for m in src.code_matches(IF_OR_TERNARY):
        open_at = m.end() - 1
        close = closing(src.text, open_at)
        if close < 0:
            continue
        yield Edit(open_at + 1, close, "1")
        cuts = [open_at, *top_level_splits(src.text, open_at + 1, close, "&&"), close]
        if len(cuts) > 2:
            for i in range(len(cuts) - 1):
                kept = [src.text[a + (1 if j == 0 else 2):b] for j, (a, b) in enumerate(zip(cuts, cuts[1:],
                                                                                             strict=False)) if j != i]
                yield Edit(open_at + 1, close, " && ".join(k.strip() for k in kept))


def cuda_atomic_to_plain(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(ATOMIC):
        args = call_arguments(src.text, m.end() - 1)
        if len(args) == 2:
            pointer, value = (src.text[a:b].strip() for a, b in args)
            yield Edit(m.start(), args[-1][1] + 1, PLAIN_ATOMIC[m.group(1)].format(p=pointer, v=value))


def cuda_half_round_trip(src: Source) -> Iterator[Edit]:
    """The value of a float assignment (a store, an accumulation, a float local) goes through __half."""
    for m in src.code_matches(ASSIGNMENT):
        line_start = src.text.rfind("\n", 0, m.start()) + 1
        target = src.text[line_start:m.start()]
        value = m.group(2)
        floaty = "[" in target or "float" in target or "[" in value or re.search(r"\d\.\d*f|expf|fmaxf", value)
        pointer = "*" in target.split("[")[0]
        if floaty and not pointer and not re.search(r"\b(int|long|for)\b", target) and "float4" not in target:
            yield Edit(*m.span(2), f"__half2float(__float2half({value}))", HALF_HEADER)


# ---------------------------------------------------------------------------------------------------------
# Triton
# ---------------------------------------------------------------------------------------------------------

TL_MEMORY = re.compile(r"\btl\.(load|store)\s*\(")
TL_ARANGE = re.compile(r"\btl\.arange\s*\(")
PY_ASSIGNMENT = re.compile(r"^\s*\w+\s*(\+=|=)\s*([^\n]+)$", re.M)
HALF_TRIP = ".to(tl.float16).to(tl.float32)"


def _tl_calls(src: Source, pattern: re.Pattern) -> Iterator[tuple[re.Match, list[tuple[int, int]]]]:
    for m in src.code_matches(pattern):
        yield m, call_arguments(src.text, m.end() - 1)


def triton_shift_index(src: Source) -> Iterator[Edit]:
    for _, args in _tl_calls(src, TL_MEMORY):
        start, end = args[0]
        yield from _shifts(start, end, src.text[start:end].strip())
    for m, args in _tl_calls(src, TL_ARANGE):
        call = src.text[m.start():args[-1][1] + 1]
        yield from _shifts(m.start(), args[-1][1] + 1, call)


def triton_swap_index_terms(src: Source) -> Iterator[Edit]:
    spans = [args[0] for _, args in _tl_calls(src, TL_MEMORY)] + [m.span(2) for m in src.code_matches(PY_ASSIGNMENT)]
    for start, end in spans:
        yield from _swap_atoms(src, start, end)


def triton_drop_mask(src: Source) -> Iterator[Edit]:
    """A `mask=` argument of a load or store is dropped (with the `other=` that only a mask gives meaning)."""
    for _, args in _tl_calls(src, TL_MEMORY):
        keyword = [(a, b) for a, b in args if src.text[a:b].strip().startswith(("mask", "other"))]
        if any(src.text[a:b].strip().startswith("mask") for a, b in keyword):
            yield Edit(keyword[0][0] - 1, keyword[-1][1], "")


def triton_half_round_trip(src: Source) -> Iterator[Edit]:
    for m, args in _tl_calls(src, TL_MEMORY):
        if m.group(1) == "load":
            yield Edit(args[-1][1] + 1, args[-1][1] + 1, HALF_TRIP)
        elif len(args) >= 2:
            start, end = args[1]
            yield Edit(start, end, f"({src.text[start:end].strip()}){HALF_TRIP}")


# ---------------------------------------------------------------------------------------------------------
# PTX
# ---------------------------------------------------------------------------------------------------------

SETP = re.compile(r"\bsetp\.(lt|le|gt|ge|eq|ne)\b")
PTX_FLIPS = {"lt": ["le", "ge"], "le": ["lt", "gt"], "gt": ["ge", "le"], "ge": ["gt", "lt"], "eq": ["ne"],
             "ne": ["eq"]}
PTX_GUARD = re.compile(r"@!?%p\d+\s+")
PTX_ADDRESS = re.compile(r"\[(%r[d]?\d+)(\+\d+)?\]")
PTX_THREE_SOURCES = re.compile(r"\b(mad|fma)\.[\w.]+\s+%\w+,\s*(%\w+),\s*(%\w+),\s*(%\w+);")
PTX_F32_LOAD = re.compile(r"\bld\.global(?:\.\w+)*\.f32\s+(%f\d+),[^;]*;")
PTX_HALF_REG = "%hmut"


def _flip_setp(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(SETP):
        for flipped in PTX_FLIPS[m.group(1)]:
            yield Edit(m.start(1), m.end(1), flipped)


def ptx_drop_guard(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(PTX_GUARD):
        yield Edit(*m.span(), "")


def ptx_shift_index(src: Source) -> Iterator[Edit]:
    """An address moves by one element (4 bytes) either way."""
    for m in src.code_matches(PTX_ADDRESS):
        offset = int(m.group(2) or 0)
        for other in (offset + 4, offset - 4):
            yield Edit(*m.span(), f"[{m.group(1)}{other:+d}]" if other else f"[{m.group(1)}]")


def ptx_swap_index_terms(src: Source) -> Iterator[Edit]:
    for m in src.code_matches(PTX_THREE_SOURCES):
        yield Edit(m.start(2), m.end(3), f"{m.group(3)}, {m.group(2)}")
        yield Edit(m.start(3), m.end(4), f"{m.group(4)}, {m.group(3)}")


def ptx_half_round_trip(src: Source) -> Iterator[Edit]:
    """After an f32 load, the register goes to f16 and back (the declaration of the f16 register rides along
    in the same edit, just after the kernel's opening brace)."""
    brace = src.text.find("{", src.text.find(".entry"))
    for m in src.code_matches(PTX_F32_LOAD):
        reg = m.group(1)
        trip = f"\n\tcvt.rn.f16.f32 \t{PTX_HALF_REG}, {reg};\n\tcvt.f32.f16 \t{reg}, {PTX_HALF_REG};"
        yield Edit(brace + 1, m.end(), f"\n\t.reg .b16 {PTX_HALF_REG};" + src.text[brace + 1:m.end()] + trip)


Operator = Callable[[Source], Iterator[Edit]]

OPERATORS: dict[str, dict[str, Operator]] = {
    "drop_barrier": {"cuda": drop_barrier, "triton": drop_barrier, "ptx": drop_barrier},
    "shift_index": {"cuda": cuda_shift_index, "triton": triton_shift_index, "ptx": ptx_shift_index},
    "swap_index_terms": {"cuda": cuda_swap_index_terms, "triton": triton_swap_index_terms,
                         "ptx": ptx_swap_index_terms},
    "change_constant": {"cuda": change_constant, "triton": change_constant, "ptx": change_constant},
    "drop_guard": {"cuda": cuda_drop_guard, "triton": triton_drop_mask, "ptx": ptx_drop_guard},
    "atomic_to_plain": {"cuda": cuda_atomic_to_plain},
    "flip_comparison": {"cuda": flip_comparison, "triton": flip_comparison, "ptx": flip_comparison},
    "half_round_trip": {"cuda": cuda_half_round_trip, "triton": triton_half_round_trip,
                        "ptx": ptx_half_round_trip},
}


def edits(src: Source, operator: str) -> list[Edit]:
    """Every distinct rewrite `operator` proposes for `src` (none when it has no row for the language)."""
    row = OPERATORS[operator].get(src.language)
    seen, found = set(), []
    for edit in row(src) if row else ():
        mutated = apply(src.text, edit)
        if mutated != src.text and mutated not in seen:
            seen.add(mutated)
            found.append(edit)
    return found
