"""Walking z3 terms: the one traversal every module uses.

Terms are DAGs with heavy sharing (a value read by many threads, a comprehension inside many sums); a
traversal that does not remember what it visited is exponential on them, so all of them go through
`subterms`, which visits each distinct node once and looks inside quantifier and lambda bodies.
"""

from __future__ import annotations

from collections.abc import Iterator

import z3
from z3.z3 import _to_expr_ref  # z3's own wrapper for an AST (what `children()` calls); z3 is pinned


def subterms(term: z3.ExprRef, *more: z3.ExprRef) -> Iterator[z3.ExprRef]:
    """Every distinct subterm of `term` (and of `more`), itself included, each once (depth first)."""
    ctx = term.ctx
    for _, ast in nodes(term, *more):
        yield _to_expr_ref(ast, ctx)


def nodes(term: z3.ExprRef, *more: z3.ExprRef) -> Iterator[tuple[int, object]]:
    """(id, raw AST) of every distinct subterm of `term` (and of `more`), the order of `subterms`. The walk
    speaks to z3's C API directly and wraps nothing: on terms of 10⁵–10⁶ shared nodes, creating a Python
    object per child visit (what `children()` does) was most of the time of a walk. The raw ASTs live as
    long as the terms do."""
    ref = term.ctx_ref()
    todo, seen = [(t.get_id(), t.as_ast()) for t in reversed((term, *more))], set()
    while todo:
        i, ast = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        yield i, ast
        todo.extend((j, arg) for j, arg in raw_arguments(ref, ast) if j not in seen)


def raw_arguments(ref, ast) -> list[tuple[int, object]]:
    """(id, raw AST) of the children of a raw AST (a quantifier's: its body), none wrapped: a walker wraps
    only what it needs (`wrap`)."""
    kind = z3.Z3_get_ast_kind(ref, ast)
    if kind == z3.Z3_QUANTIFIER_AST:
        asts = [z3.Z3_get_quantifier_body(ref, ast)]
    elif kind == z3.Z3_APP_AST:
        asts = [z3.Z3_get_app_arg(ref, ast, k) for k in range(z3.Z3_get_app_num_args(ref, ast))]
    else:
        asts = []
    return [(z3.Z3_get_ast_id(ref, a), a) for a in asts]


def under_binder(term: z3.ExprRef) -> bool:
    """Whether `term` holds a bound variable (a quantifier's or lambda's body): no closed claim can state it."""
    ref = term.ctx_ref()
    return any(z3.Z3_get_ast_kind(ref, ast) == z3.Z3_VAR_AST for _, ast in nodes(term))


def wrap(ast: object, ctx: z3.Context) -> z3.ExprRef:
    return _to_expr_ref(ast, ctx)


def larger_than(terms: list[z3.ExprRef], limit: int) -> bool:
    """Whether `terms` together have more than `limit` distinct subterms; the walk stops there, so asking
    costs at most `limit` visits however large the terms are."""
    return bool(terms) and any(n > limit for n, _ in enumerate(nodes(*terms), start=1))


def applications(term: z3.ExprRef, decls: tuple[z3.FuncDeclRef, ...]) -> list[z3.ExprRef]:
    """The distinct subterms of `term` that apply one of `decls`, in the order of `subterms`."""
    ref, ctx, wanted = term.ctx_ref(), term.ctx, {d.get_id() for d in decls}
    return [_to_expr_ref(ast, ctx) for _, ast in nodes(term)
            if z3.Z3_get_ast_kind(ref, ast) == z3.Z3_APP_AST and _decl_id(ref, ast) in wanted]


def reaching(term: z3.ExprRef, decls: tuple[z3.FuncDeclRef, ...]) -> set[int]:
    """The ids of the subterms of `term` that apply one of `decls` or have a subterm that does: one pass over
    the DAG, where asking `any(... for s in subterms(t))` of every t walks shared parts again and again."""
    ref, wanted = term.ctx_ref(), {d.get_id() for d in decls}
    return reaching_ids(term, lambda ast: z3.Z3_get_ast_kind(ref, ast) == z3.Z3_APP_AST and
                        _decl_id(ref, ast) in wanted)


def reaching_ids(term: z3.ExprRef, hit) -> set[int]:
    """The ids of the subterms of `term` for which `hit(raw AST)` holds or that have such a subterm."""
    ref = term.ctx_ref()
    kids: dict[int, list[int]] = {}
    found: set[int] = set()
    for i, ast in nodes(term):
        kids[i] = [j for j, _ in raw_arguments(ref, ast)]
        if hit(ast):
            found.add(i)
    done: set[int] = set()
    stack = [(term.get_id(), False)]
    while stack:                         # children before parents
        i, expanded = stack.pop()
        if i in done:
            continue
        if not expanded:
            stack.append((i, True))
            stack.extend((k, False) for k in kids[i] if k not in done)
            continue
        done.add(i)
        if any(k in found for k in kids[i]):
            found.add(i)
    return found


def applies_beyond(term: z3.ExprRef, decls: tuple[z3.FuncDeclRef, ...], stop: set[int]) -> bool:
    """Whether `term` has a subterm applying one of `decls` whose id is not in `stop`, not looking inside
    the subterms whose ids are in `stop` (a walk that skips parts already known)."""
    ref, wanted = term.ctx_ref(), {d.get_id() for d in decls}
    todo, seen = [(term.get_id(), term.as_ast())], set()
    while todo:
        i, ast = todo.pop()
        if i in seen or i in stop:
            continue
        seen.add(i)
        if z3.Z3_get_ast_kind(ref, ast) == z3.Z3_APP_AST and _decl_id(ref, ast) in wanted:
            return True
        todo.extend(raw_arguments(ref, ast))
    return False


def _decl_id(ref, ast) -> int:
    return z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, z3.Z3_get_app_decl(ref, ast)))


def constants(term: z3.ExprRef) -> list[z3.ExprRef]:
    """The uninterpreted constants (free symbols) of `term`, once each by name."""
    ref, ctx = term.ctx_ref(), term.ctx
    found: dict[str, z3.ExprRef] = {}
    for _, ast in nodes(term):
        if z3.Z3_get_ast_kind(ref, ast) == z3.Z3_APP_AST and z3.Z3_get_app_num_args(ref, ast) == 0 and \
                z3.Z3_get_decl_kind(ref, z3.Z3_get_app_decl(ref, ast)) == z3.Z3_OP_UNINTERPRETED:
            t = _to_expr_ref(ast, ctx)
            found.setdefault(str(t), t)
    return list(found.values())


def mentions(term: z3.ExprRef, symbol: z3.ExprRef) -> bool:
    """Whether `symbol` (a ground term) occurs in `term`: replacing it changes the term exactly when it
    occurs. One pass in z3's own code; a Python walk wraps every node, and replay asks this of long bodies."""
    probe = z3.Const("mentions!probe", symbol.sort())
    return not z3.substitute(term, (symbol, probe)).eq(term)


def outside_binders(term: z3.ExprRef, decls: tuple[z3.FuncDeclRef, ...]) -> list[z3.ExprRef]:
    """The distinct applications of `decls` in `term` not under a binder (their free symbols are the term's
    own), in the order of a depth-first walk that does not enter quantifiers or lambdas."""
    ref, ctx, wanted = term.ctx_ref(), term.ctx, {d.get_id() for d in decls}
    found, todo, seen = [], [(term.get_id(), term.as_ast())], set()
    while todo:
        i, ast = todo.pop()
        if i in seen or z3.Z3_get_ast_kind(ref, ast) != z3.Z3_APP_AST:
            continue
        seen.add(i)
        if _decl_id(ref, ast) in wanted:
            found.append(_to_expr_ref(ast, ctx))
        todo.extend(raw_arguments(ref, ast))
    return found


def is_read(t: z3.ExprRef) -> bool:
    """An element of an input: an uninterpreted function of one bit-vector index."""
    return z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED and t.num_args() == 1 and z3.is_bv(t.arg(0))
