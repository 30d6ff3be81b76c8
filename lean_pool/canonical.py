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

import hashlib

import z3

from lean_pool.checker import Z3_LOCK, Obligation
from semantics.terms import raw_arguments, wrap


class _Printer:
    """One node's line, from its raw AST: the walk below meets 10⁴–10⁵ nodes per obligation, and making a
    Python object per node (and per child visit) was most of the time of a cache lookup. The texts of sorts
    and operators repeat on every node and are made once each."""

    def __init__(self, ctx: z3.Context) -> None:
        self.ctx, self.ref = ctx, ctx.ref()
        self.constants: dict[int, int] = {}     # AST id -> canonical constant number
        self.sorts: dict[int, str] = {}
        self.decls: dict[int, tuple[str, bool]] = {}   # decl id -> (text, uninterpreted)

    def sort(self, ast) -> str:
        sort = z3.Z3_sort_to_ast(self.ref, z3.Z3_get_sort(self.ref, ast))
        key = z3.Z3_get_ast_id(self.ref, sort)
        if key not in self.sorts:
            self.sorts[key] = z3.Z3_ast_to_string(self.ref, sort)
        return self.sorts[key]

    def decl(self, ast) -> tuple[str, bool]:
        raw = z3.Z3_get_app_decl(self.ref, ast)
        key = z3.Z3_get_ast_id(self.ref, z3.Z3_func_decl_to_ast(self.ref, raw))
        if key not in self.decls:
            decl = z3.FuncDeclRef(raw, self.ctx)
            uninterpreted = decl.kind() == z3.Z3_OP_UNINTERPRETED
            params = ",".join(str(p) for p in decl.params())
            self.decls[key] = (f"{decl.sexpr() if uninterpreted else decl.name()}[{params}]", uninterpreted)
        return self.decls[key]

    def line(self, i: int, ast, children: list[int]) -> str:
        kind = z3.Z3_get_ast_kind(self.ref, ast)
        if kind == z3.Z3_QUANTIFIER_AST:
            t = wrap(ast, self.ctx)
            kind = "forall" if t.is_forall() else "exists" if t.is_exists() else "lambda"
            bound = ",".join(t.var_sort(k).sexpr() for k in range(t.num_vars()))
            return f"{kind}[{bound}]({','.join(map(str, children))})"
        if kind == z3.Z3_VAR_AST:
            return f"var{z3.Z3_get_index_value(self.ref, ast)}:{self.sort(ast)}"
        text, uninterpreted = self.decl(ast)
        if not children and uninterpreted:
            return f"c{self.constants.setdefault(i, len(self.constants))}:{self.sort(ast)}"
        if not children:    # a value or an interpreted constant: its own text is canonical
            return f"{z3.Z3_ast_to_string(self.ref, ast)}:{self.sort(ast)}"
        return f"{text}:{self.sort(ast)}({','.join(map(str, children))})"


def canonical_text(obligation: Obligation) -> str:
    """Under `Z3_LOCK`: it walks the main context, which a searching thread may share with others."""
    with Z3_LOCK:
        return _canonical_text(obligation)


def _canonical_text(obligation: Obligation) -> str:
    roots = [obligation.formula, *obligation.witness.values()]
    printer = _Printer(obligation.formula.ctx)
    index: dict[int, int] = {}          # AST id -> line number
    lines: list[str] = []
    todo: list[tuple[int, object, bool]] = [(t.get_id(), t.as_ast(), False) for t in reversed(roots)]
    opened: set[int] = set()            # expanded once already: a shared subterm is visited once
    while todo:
        i, ast, expanded = todo.pop()
        if i in index or (not expanded and i in opened):
            continue
        children = raw_arguments(printer.ref, ast)
        if not expanded:
            opened.add(i)
            todo.append((i, ast, True))
            todo.extend((k, c, False) for k, c in reversed(children) if k not in index)
            continue
        index[i] = len(lines)
        lines.append(printer.line(i, ast, [index[k] for k, _ in children]))
    roots_line = ";".join(f"{name}={index[t.get_id()]}" for name, t in obligation.witness.items())
    return "\n".join([*lines, f"formula={index[obligation.formula.get_id()]};{roots_line}"])


# Operators whose arguments may come in any order: z3's simplifier orders them by AST id, which depends on
# which terms the process made first, so one formula can come out with its disjuncts in another order.
COMMUTATIVE = {z3.Z3_OP_AND, z3.Z3_OP_OR, z3.Z3_OP_XOR, z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT, z3.Z3_OP_ADD,
               z3.Z3_OP_MUL, z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR}
# ... and associative as well: z3 nests one n-ary sum differently in two processes ((a + b) + c + d against
# (c + b) + a + d, seen in a memory-safety goal of vector_add_grid_stride), so their arguments are flattened
ASSOCIATIVE = COMMUTATIVE - {z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT}


def structural_digest(formula: z3.ExprRef) -> str:
    """A digest equal for two formulas that differ at most in the order of commutative arguments and the nesting
    of associative ones: each node is its operator, sort and its children's digests (sorted under a commutative
    operator; an argument that is the same associative operator at the same sort contributes its own arguments);
    constants keep their names. For comparing one obligation derived twice, not for caching (no
    alpha-renaming)."""
    return StructuralDigests().digest(formula)


class StructuralDigests:
    """`structural_digest` of many formulas, each shared subterm digested once. A subterm's digest is kept by
    its AST id, and the formula it came from is kept alive with it, so no id is reused while the table lives."""

    def __init__(self) -> None:
        self.digests: dict[int, str] = {}
        self.flat: dict[int, tuple[str, list[str]]] = {}   # an associative node: (its head, its flattened parts)
        self.roots: list[z3.ExprRef] = []
        self.printer: _Printer | None = None

    def digest(self, formula: z3.ExprRef) -> str:
        with Z3_LOCK:
            if formula.get_id() not in self.digests:
                self.roots.append(formula)
                self._walk(formula)
            return self.digests[formula.get_id()]

    def _walk(self, formula: z3.ExprRef) -> None:
        printer = self.printer = self.printer or _Printer(formula.ctx)
        digests = self.digests
        todo: list[tuple[int, object, bool]] = [(formula.get_id(), formula.as_ast(), False)]
        while todo:
            i, ast, expanded = todo.pop()
            if i in digests:
                continue
            children = raw_arguments(printer.ref, ast)
            if not expanded:
                todo.append((i, ast, True))
                todo.extend((k, c, False) for k, c in children if k not in digests)
                continue
            parts = [digests[k] for k, _ in children]
            if z3.Z3_get_ast_kind(printer.ref, ast) == z3.Z3_APP_AST:
                kind = z3.Z3_get_decl_kind(printer.ref, z3.Z3_get_app_decl(printer.ref, ast))
                head = printer.decl(ast)[0] if parts else z3.Z3_ast_to_string(printer.ref, ast)  # (a name, a value)
                node = f"{head}:{printer.sort(ast)}"
                if kind in ASSOCIATIVE and parts:
                    parts = [d for k, _ in children
                             for d in (self.flat[k][1] if self.flat.get(k, ("",))[0] == node else [digests[k]])]
                    self.flat[i] = (node, parts)
                if kind in COMMUTATIVE:
                    parts.sort()
            else:
                node = printer.line(i, ast, [])     # a quantifier's kind and bound sorts, or a bound variable
            digests[i] = hashlib.sha256(f"{node}({','.join(parts)})".encode()).hexdigest()
