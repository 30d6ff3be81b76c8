"""What each kind of search goal asks an agent, and how its answer becomes the hint the core expects.
Untrusted: a wrong hint built here fails the core's obligations like any prover's.

One row per goal kind (`KINDS`): the names an answer may use, the terms it must give (name -> width), the
question in words, and the hint built from the parsed terms. The goals' arguments are the search's
(`orchestrator.search.Goal.args`): `inverse` (index, variables, e), `bounds` (loop,), `reindex` (source,
source_var, target, target_var).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

import z3

from orchestrator.llm.proposal import WIDTH, Answer, named_terms
from semantics.terms import constants

Names = dict[str, z3.BitVecRef]


def py_name(name: str) -> str:
    """A kernel value's name as an expression may spell it: `tid.x` is `tid_x`."""
    spelled = re.sub(r"\W", "_", name)
    return spelled if spelled[:1].isalpha() else f"v_{spelled}"


def _free(*terms: z3.ExprRef) -> Names:
    """The bit-vector constants the terms read, by spelled name (the names an answer may use)."""
    found: Names = {}
    for term in terms:
        for c in constants(term):
            if z3.is_bv(c):
                found.setdefault(py_name(str(c)), c)
    return found


def shown(term: z3.ExprRef) -> str:
    """A term as the prompt shows it: an s-expression with the names spelled as answers spell them."""
    pairs = [(c, z3.BitVec(name, c.size())) for name, c in _free(term).items() if name != str(c)]
    return (z3.substitute(term, *pairs) if pairs else term).sexpr()


@dataclass(frozen=True)
class Kind:
    names: Callable[[tuple], Names]               # the goal's named values
    wanted: Callable[[tuple], dict[str, int]]     # the terms asked for: name -> width
    question: Callable[[tuple], str]
    hint: Callable[[tuple, dict[str, z3.BitVecRef]], object]


def _inverse_names(args: tuple) -> Names:
    index, variables, e = args
    return {**{py_name(str(v)): v for v in variables}, "e": e}


def _inverse_question(args: tuple) -> str:
    index, variables, _ = args
    return (f"Which thread (and loop iterations) stores output element e? The store's element index is\n"
            f"  {shown(index)}\nover {', '.join(py_name(str(v)) for v in variables)}. Give each of them as a term in e "
            f"(only e may appear) such that the index at those values is e, for every e this store writes.")


def _loop_names(args: tuple) -> Names:
    loop = args[0]
    stay = loop.stay or [z3.BoolVal(False)]
    return {n: c for n, c in _free(*stay).items() if not c.eq(loop.k)}


def _bounds_question(args: tuple) -> str:
    loop = args[0]
    stay = z3.Or(loop.stay) if loop.stay else z3.BoolVal(False)
    return (f"How many iterations does the loop at {loop.header} run? It goes round again while\n  {shown(stay)}\n"
            f"holds, where {py_name(str(loop.k))} counts completed iterations. Give `bound`, the iteration count, "
            f"as a term over the other names (not {py_name(str(loop.k))}).")


def _reindex_names(args: tuple) -> Names:
    source, source_var, _, target_var = args
    names = {n: c for n, c in _free(source).items() if not c.eq(target_var)}
    if source_var is not None:
        names[py_name(str(source_var))] = source_var
    return names


def _reindex_question(args: tuple) -> str:
    source, source_var, target, target_var = args
    source_name = py_name(str(source_var)) if source_var is not None else "(none)"
    target_name = py_name(str(target_var))
    return (f"Two reductions must be matched by a bijective reindexing. Source term (index {source_name}):\n"
            f"  {shown(source)}\nTarget term (index {target_name}):\n  {shown(target)}\nGive `{target_name}` as a "
            f"term over {source_name} such that the target at it equals the source.")


KINDS: dict[str, Kind] = {
    "inverse": Kind(_inverse_names, lambda a: {py_name(str(v)): v.size() for v in a[1]}, _inverse_question,
                    lambda a, terms: {str(v): terms[py_name(str(v))] for v in a[1]}),
    "bounds": Kind(_loop_names, lambda a: {"bound": WIDTH}, _bounds_question, lambda a, terms: terms["bound"]),
    "reindex": Kind(_reindex_names, lambda a: {py_name(str(a[3])): a[3].size()}, _reindex_question,
                    lambda a, terms: terms[py_name(str(a[3]))]),
}


def hint_of(kind: str, args: tuple, answer: Answer) -> object:
    """The core's hint for a goal from a parsed answer (raises `ProposalError` when malformed). The terms
    may only use the goal's own names: an inverse's terms use e alone."""
    row = KINDS[kind]
    names = row.names(args)
    if kind == "inverse":
        names = {"e": names["e"]}
    return row.hint(args, named_terms(answer, row.wanted(args), names))


def canonical_key(kind: str, key: str, args: tuple) -> str:
    """The goal's content key for the learning loop: its kind, its hint key without PTX line numbers, and the
    digest of the terms its obligations are built from (the next kernel with the same stuck goal has the same
    key; a stored answer for it is a candidate the search checks again, never a fact)."""
    stable = re.sub(r"line\d+|\$L__\w+", "", key)
    parts = [kind, stable, *(_text(a) for a in args)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _text(arg: object) -> str:
    if isinstance(arg, z3.ExprRef):
        return arg.sexpr()
    if isinstance(arg, list | tuple):
        return ",".join(_text(a) for a in arg)
    stay = getattr(arg, "stay", None)
    return _text(stay) if stay is not None else type(arg).__name__
