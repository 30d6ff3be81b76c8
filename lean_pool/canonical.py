"""The canonical text of an obligation: what the lemma cache hashes.

z3's SMT-LIB printer is not canonical: its let-bound names come from AST ids, and which subterms it binds
depends on the state of the process, and `FreshConst` names depend on how many were made before. So a
long-lived worker would print one obligation differently from task to task and never hit the cache. This
text lists the formula's DAG in post-order, one node per line, naming uninterpreted constants by order of
first occurrence (alpha-renaming keeps satisfiability) and everything else by its operator, parameters and
sort — equal structure, equal text (STYLE 4: canonicalize before caching). The witnesses are part of it,
by name, because a refutation's evidence is their values.
"""

from __future__ import annotations

import z3

from lean_pool.checker import Z3_LOCK, Obligation
from semantics.terms import arguments, wrap


class _Texts:
    """The texts of a node's sort and operator, each made once per canonical text: a DAG of thousands of
    nodes has a handful of sorts and operators, and making their texts was most of the time."""

    def __init__(self) -> None:
        self.sorts: dict[int, str] = {}
        self.decls: dict[int, str] = {}

    def sort(self, t: z3.ExprRef) -> str:
        ref = t.ctx_ref()
        sort = z3.Z3_sort_to_ast(ref, z3.Z3_get_sort(ref, t.as_ast()))
        key = z3.Z3_get_ast_id(ref, sort)
        if key not in self.sorts:
            self.sorts[key] = z3.Z3_ast_to_string(ref, sort)
        return self.sorts[key]

    def decl(self, t: z3.ExprRef) -> str:
        ref = t.ctx_ref()
        key = z3.Z3_get_ast_id(ref, z3.Z3_func_decl_to_ast(ref, z3.Z3_get_app_decl(ref, t.as_ast())))
        if key not in self.decls:
            decl = t.decl()
            params = ",".join(str(p) for p in decl.params())
            name = decl.name() if decl.kind() != z3.Z3_OP_UNINTERPRETED else decl.sexpr()
            self.decls[key] = f"{name}[{params}]"
        return self.decls[key]


def _node(t: z3.ExprRef, children: list[int], constants: dict[int, int], texts: _Texts) -> str:
    args = ",".join(map(str, children))
    if z3.is_quantifier(t):
        kind = "forall" if t.is_forall() else "exists" if t.is_exists() else "lambda"
        bound = ",".join(t.var_sort(i).sexpr() for i in range(t.num_vars()))
        return f"{kind}[{bound}]({args})"
    if z3.is_var(t):
        return f"var{z3.get_var_index(t)}:{texts.sort(t)}"
    if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
        return f"c{constants.setdefault(t.get_id(), len(constants))}:{texts.sort(t)}"
    if z3.is_const(t):    # a value or an interpreted constant: its own text is canonical
        return f"{t.sexpr()}:{texts.sort(t)}"
    return f"{texts.decl(t)}:{texts.sort(t)}({args})"


def canonical_text(obligation: Obligation) -> str:
    """Under `Z3_LOCK`: it walks the main context, which a searching thread may share with others."""
    with Z3_LOCK:
        return _canonical_text(obligation)


def _canonical_text(obligation: Obligation) -> str:
    roots = [obligation.formula, *obligation.witness.values()]
    index: dict[int, int] = {}          # AST id -> line number
    constants: dict[int, int] = {}      # AST id -> canonical constant number
    lines: list[str] = []
    todo: list[tuple[z3.ExprRef, bool]] = [(t, False) for t in reversed(roots)]
    opened: set[int] = set()            # expanded once already: a shared subterm is visited once
    texts = _Texts()
    while todo:
        t, expanded = todo.pop()
        if t.get_id() in index or (not expanded and t.get_id() in opened):
            continue
        children = arguments(t)
        if not expanded:
            opened.add(t.get_id())
            todo.append((t, True))
            todo.extend((wrap(c, t.ctx), False) for i, c in reversed(children) if i not in index)
            continue
        index[t.get_id()] = len(lines)
        lines.append(_node(t, [index[i] for i, _ in children], constants, texts))
    roots_line = ";".join(f"{name}={index[t.get_id()]}" for name, t in obligation.witness.items())
    return "\n".join([*lines, f"formula={index[obligation.formula.get_id()]};{roots_line}"])
