"""Walking z3 terms: the one traversal every module uses.

Terms are DAGs with heavy sharing (a value read by many threads, a comprehension inside many sums); a
traversal that does not remember what it visited is exponential on them, so all of them go through
`subterms`, which visits each distinct node once and looks inside quantifier and lambda bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import z3
from z3.z3 import _to_expr_ref  # z3's own wrapper for an AST (what `children()` calls); z3 is pinned


def subterms(term: z3.ExprRef) -> Iterator[z3.ExprRef]:
    """Every distinct subterm of `term`, itself included, each once (depth first, children left to right).

    A child already visited is recognised by its id before it is wrapped as a Python object: on a shared DAG
    most children are, and wrapping them all was most of the time of a walk."""
    todo, seen = [term], set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        yield t
        if z3.is_quantifier(t):
            todo.append(t.body())
        else:
            todo.extend(_unseen_children(t, seen))


def larger_than(terms: list[z3.ExprRef], limit: int) -> bool:
    """Whether `terms` together have more than `limit` distinct subterms; the walk stops there, so asking
    costs at most `limit` visits however large the terms are."""
    todo, seen = list(terms), set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if len(seen) > limit:
            return True
        if z3.is_quantifier(t):
            todo.append(t.body())
        else:
            todo.extend(_unseen_children(t, seen))
    return False


def reaching(term: z3.ExprRef, pred: Callable[[z3.ExprRef], bool]) -> set[int]:
    """The ids of the subterms of `term` that satisfy `pred` or have a subterm that does: one pass over the
    DAG, where asking `any(pred(s) for s in subterms(t))` of every t would walk shared parts again and again."""
    nodes = {t.get_id(): t for t in subterms(term)}
    hit: set[int] = set()
    done: set[int] = set()
    stack = [(term.get_id(), False)]
    while stack:
        i, expanded = stack.pop()
        if i in done:
            continue
        kids = _child_ids(nodes[i])
        if not expanded:
            stack.append((i, True))
            stack.extend((k, False) for k in kids if k not in done)
            continue
        done.add(i)
        if pred(nodes[i]) or any(k in hit for k in kids):
            hit.add(i)
    return hit


def _child_ids(t: z3.ExprRef) -> list[int]:
    if z3.is_quantifier(t):
        return [t.body().get_id()]
    if not z3.is_app(t):
        return []
    ref, ast = t.ctx_ref(), t.as_ast()
    return [z3.Z3_get_ast_id(ref, z3.Z3_get_app_arg(ref, ast, i)) for i in range(z3.Z3_get_app_num_args(ref, ast))]


def _unseen_children(t: z3.ExprRef, seen: set[int]) -> list[z3.ExprRef]:
    if not z3.is_app(t):
        return []
    ctx, ref, ast = t.ctx, t.ctx_ref(), t.as_ast()
    children = []
    for i in range(z3.Z3_get_app_num_args(ref, ast)):
        arg = z3.Z3_get_app_arg(ref, ast, i)
        if z3.Z3_get_ast_id(ref, arg) not in seen:
            children.append(_to_expr_ref(arg, ctx))
    return children


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
