"""Walking z3 terms: the one traversal every module uses.

Terms are DAGs with heavy sharing (a value read by many threads, a comprehension inside many sums); a
traversal that does not remember what it visited is exponential on them, so all of them go through
`subterms`, which visits each distinct node once and looks inside quantifier and lambda bodies.
"""

from __future__ import annotations

from collections.abc import Iterator

import z3


def subterms(term: z3.ExprRef) -> Iterator[z3.ExprRef]:
    """Every distinct subterm of `term`, itself included, each once."""
    todo, seen = [term], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        yield t
        todo.extend([t.body()] if z3.is_quantifier(t) else t.children())


def constants(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The uninterpreted constants (free symbols) of `term`, once each by name."""
    found: dict[str, z3.ExprRef] = {}
    for t in subterms(term):
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            found.setdefault(str(t), t)
    return list(found.values())


def mentions(term: z3.ExprRef, symbol: z3.ExprRef) -> bool:
    return any(z3.eq(t, symbol) for t in subterms(term))


def outside_binders(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The distinct application subterms of `term` not under a binder (their free symbols are the term's own)."""
    found, todo, seen = [], [term], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        found.append(t)
        todo.extend(c for c in t.children() if not z3.is_quantifier(c))
    return found
