"""The proposal language: what an LLM prover may answer, parsed strictly and never evaluated. Untrusted.

An answer is one JSON object (`Answer`, the schema sent as the request's `response_format`):
`{"thought": "...", "terms": [{"name": "tid.x", "expr": "255 - e % 256"}, ...]}`. Each term is a small
expression over the names the goal offers (thread coordinates `ctaid.x` ... `tid.z`, loop iteration symbols,
the element index `e`, a reduction's index), parsed with Python's `ast` in `eval` mode and admitted only if
every node is a name the goal offers, an integer constant, `+ - * // %`, unary minus, or a comparison. The
tree is then translated node by node into a z3 term: nothing is ever executed.

Arithmetic is unsigned 64-bit bit-vector arithmetic (the PTX index width): names narrower than 64 bits are
zero-extended, `//` and `%` are unsigned division and remainder, `-` wraps; a term for a narrower variable
is truncated to its width. A comparison is a z3 boolean (allowed where a goal asks for one; no goal does
today, so a comparison where a number is asked is a malformed proposal). What a goal asks for, by kind:

* `inverse`: one term per writer variable (the thread and loop coordinates that write element `e`);
* `bounds`: `bound`, the loop's iteration count, over the thread coordinates the loop's condition reads;
* `reindex`: one term for the target reduction's index, over the source reduction's index;
* `split`: `quotient` and `remainder` of an index division (parsed here; the core asks heuristics only).

Proof steps over the proof kernel (intermediate statements, rule choices, loop invariants) are not part of
the language yet (docs/llm.md).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable

import z3
from pydantic import BaseModel, ConfigDict, Field, ValidationError

WIDTH = 64
MAX_EXPR_CHARS = 400
MAX_NODES = 120
MAX_TERMS = 8


class ProposalError(ValueError):
    """An answer that is not a well-formed proposal for its goal; the message is fed back to the agent."""


class Term(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(max_length=64)
    expr: str = Field(max_length=MAX_EXPR_CHARS)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    thought: str = Field(max_length=4000)
    terms: list[Term] = Field(max_length=MAX_TERMS)


def response_format() -> dict:
    """The OpenAI `response_format` asking for an `Answer` (strict JSON schema)."""
    schema = Answer.model_json_schema()
    return {"type": "json_schema", "json_schema": {"name": "lark_proposal", "strict": True, "schema": schema}}


def parse_answer(text: str) -> Answer:
    """The model's reply as an `Answer`; anything else (not JSON, extra keys, long strings) is malformed."""
    try:
        return Answer.model_validate(json.loads(text))
    except (json.JSONDecodeError, ValidationError, TypeError) as exc:
        raise ProposalError(f"the answer is not a proposal object: {_short(exc)}") from None


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:300]


_ARITH: dict[type, Callable] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: z3.UDiv,
    ast.Mod: z3.URem,
}
_COMPARE: dict[type, Callable] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: z3.ULT,
    ast.LtE: z3.ULE,
    ast.Gt: z3.UGT,
    ast.GtE: z3.UGE,
}


def _wide(term: z3.BitVecRef) -> z3.BitVecRef:
    return z3.ZeroExt(WIDTH - term.size(), term) if term.size() < WIDTH else term


class _Translate:
    """One expression's tree to a z3 term; any node outside the grammar is a `ProposalError`."""

    def __init__(self, names: dict[str, z3.BitVecRef]):
        self.names = names

    def number(self, node: ast.AST) -> z3.BitVecRef:
        term = self.term(node)
        if not z3.is_bv(term):
            raise ProposalError("a comparison stands where a number is asked for")
        return term

    def term(self, node: ast.AST) -> z3.ExprRef:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if not 0 <= node.value < 1 << WIDTH:
                raise ProposalError(f"the constant {node.value} does not fit {WIDTH} bits")
            return z3.BitVecVal(node.value, WIDTH)
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise ProposalError(f"unknown name {node.id!r} (the names are {', '.join(sorted(self.names))})")
            return _wide(self.names[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.number(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return _ARITH[type(node.op)](self.number(node.left), self.number(node.right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return _COMPARE[type(node.ops[0])](self.number(node.left), self.number(node.comparators[0]))
        raise ProposalError(f"{type(node).__name__} is not allowed (names, integers, + - * // %, comparisons)")


def parse_term(text: str, names: dict[str, z3.BitVecRef], width: int = WIDTH) -> z3.BitVecRef:
    """`text` as a `width`-bit term over `names` (a name's z3 variable says its own width)."""
    text = text.strip()
    if len(text) > MAX_EXPR_CHARS:
        raise ProposalError(f"an expression is longer than {MAX_EXPR_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ProposalError(f"{text!r} does not parse: {exc.msg}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ProposalError(f"{text!r} has more than {MAX_NODES} nodes")
    term = _Translate(names).number(tree.body)
    return z3.Extract(width - 1, 0, term) if width < WIDTH else term


def named_terms(answer: Answer, wanted: dict[str, int], names: dict[str, z3.BitVecRef]) -> dict[str, z3.BitVecRef]:
    """The answer's terms for exactly the names in `wanted` (name -> width): a missing, repeated or extra
    name is malformed."""
    given = [t.name for t in answer.terms]
    if sorted(given) != sorted(wanted):
        raise ProposalError(f"the terms must name exactly {', '.join(sorted(wanted))} "
                            f"(got {', '.join(given) or 'none'})")
    return {t.name: parse_term(t.expr, names, wanted[t.name]) for t in answer.terms}
