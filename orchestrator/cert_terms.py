"""z3 terms as certificate text, read back as the very same terms; prover hints to and from JSON.

A proof replayed by `lark check` must meet goals that the semantics derives again from the sources, by AST
identity (up to the order of commutative arguments), so a term must come back as exactly the term that was
written. z3's own printer (`sexpr()`) does not round-trip through its parser (`z3.parse_smt2_string`): it
regroups n-ary `+` and `concat`, prints a negative or fractional numeral as an application, and reads a declared
`exp` as its own transcendental function. So terms are printed here (`_Printer`), and parsed by z3:

* every application is written with exactly its own arguments; each closed subterm that is not a leaf is one
  `define-fun`, shared by all terms of the table (a value read by every lane is written once);
* a rational numeral that is negative or not an integer is written as a constant `|lark.real!p/q|`
  (`|lark.int!n|` for a negative integer), declared with the others, and read back as the numeral p/q;
* an uninterpreted function named like a solver's built-in (`exp`, `tanh`, ...) is written `lark.fn!exp` and
  named back;
* a quantifier or lambda the parser builds carries a quantifier id named after its variables, which one built
  through the API does not: each is rebuilt through the API from its variables and body.

Symbols are quoted where SMT-LIB needs it (`tid.x'`); z3's internal operators (`bvudiv_i`) round-trip as they
are. Reading a text is untrusted work: whatever it yields, the kernel's rules judge the terms it is handed, and a
goal is met only by a theorem that states what the semantics derives itself.

An obligation's certified text (`obligation_text`) is the declarations of its free symbols sorted by name, then
`(assert <formula.sexpr()>)`: unlike `Obligation.smt2()` (z3's benchmark printer, whose `let` binders are
named after internal AST ids) it depends on the formula alone, so its SHA-256 is the same in every process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from fractions import Fraction

import z3

from lean_pool.checker import SIMPLE_SYMBOL, Obligation
from lean_pool.cvc5_checker import SOLVER_TRANSCENDENTALS, standard_smt2
from orchestrator.cert_schema import Hint, TableTerm, Term
from semantics.problem import Provers
from semantics.terms import subterms

_HOLE = "|lark.term|"        # the name a single parsed term is bound to
_TERM = "lark.t!{}"          # the names the terms of a table are bound to
_REAL, _INT, _IDEAL = "lark.real!", "lark.int!", "lark.fn!"


class BadTerm(Exception):
    """A recorded term that cannot be read back (a parse error, or a name the table declares twice)."""


def free_declarations(*terms: z3.ExprRef) -> list[z3.FuncDeclRef]:
    """The uninterpreted constants and functions the terms mention, in a fixed order (by name)."""
    if not terms:
        return []
    found = {t.decl().name(): t.decl() for t in subterms(*terms)
             if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED}
    return [found[name] for name in sorted(found)]


def obligation_text(ob: Obligation) -> tuple[str, str]:
    """The obligation's certified text and its SHA-256."""
    declarations = [d.sexpr() for d in free_declarations(ob.formula)]
    text = "\n".join([*declarations, f"(assert {ob.formula.sexpr()})", "(check-sat)", ""])
    return text, hashlib.sha256(text.encode()).hexdigest()


def _placeholder(numeral: z3.ExprRef) -> z3.ExprRef | None:
    """The constant a numeral is written as, or None for one that prints as itself."""
    if z3.is_rational_value(numeral):
        q = numeral.as_fraction()
        if q.denominator != 1 or q.numerator < 0:
            return z3.Real(f"{_REAL}{q.numerator}/{q.denominator}")
    elif z3.is_int_value(numeral) and numeral.as_long() < 0:
        return z3.Int(f"{_INT}{numeral.as_long()}")
    return None


def _numeral(name: str) -> z3.ExprRef | None:
    """The numeral a placeholder constant stands for, or None for any other name."""
    if name.startswith(_REAL):
        return z3.RealVal(Fraction(name[len(_REAL):]))
    if name.startswith(_INT):
        return z3.IntVal(int(name[len(_INT):]))
    return None


class _Printer:
    """A faithful SMT-LIB printer of z3 terms: every application with exactly its own arguments (z3's printer
    writes an n-ary concat or + in whatever grouping it likes, which the parser then reads as another term). Each
    closed subterm that is not a leaf is one `define-fun` (`|lark.n!K|`), shared by every term of the table;
    a subterm under a binder that mentions its bound variables is written inline."""

    def __init__(self) -> None:
        self.definitions: list[str] = []
        self.names: dict[int, str] = {}      # closed subterm id -> its text (a leaf's own, else its definition's)
        self.free: dict[int, frozenset[int]] = {}   # subterm id -> the de Bruijn indices it leaves free
        self.ops: dict[int, str] = {}        # declaration id -> its operator text
        self.placeholders: dict[str, z3.ExprRef] = {}

    def term(self, t: z3.ExprRef) -> str:
        self._free_variables(t)
        return self._closed(t)

    def _free_variables(self, term: z3.ExprRef) -> None:
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.free:
                continue
            kids = [t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else []
            if not expanded:
                stack.append((t, True))
                stack.extend((k, False) for k in kids if k.get_id() not in self.free)
                continue
            if z3.is_var(t):
                self.free[t.get_id()] = frozenset({z3.get_var_index(t)})
            elif z3.is_quantifier(t):
                n = t.num_vars()
                self.free[t.get_id()] = frozenset(i - n for i in self.free[t.body().get_id()] if i >= n)
            else:
                self.free[t.get_id()] = frozenset().union(*(self.free[k.get_id()] for k in kids))

    def _leaf(self, t: z3.ExprRef) -> str | None:
        """The text of a leaf (a symbol, a numeral, true, false), else None."""
        if not z3.is_app(t) or t.num_args():
            return None
        if z3.is_bv_value(t):
            return f"(_ bv{t.as_long()} {t.size()})"
        placeholder = _placeholder(t)
        if placeholder is not None:
            self.placeholders[str(placeholder)] = placeholder
            return _quoted(str(placeholder))
        if z3.is_rational_value(t):
            return f"{t.as_fraction().numerator}.0"
        if z3.is_int_value(t):
            return str(t.as_long())
        if z3.is_true(t) or z3.is_false(t):
            return t.sexpr()
        if t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            return _symbol(t.decl().name())
        raise BadTerm(f"a constant {t.sexpr()} has no certificate form")

    def _closed(self, term: z3.ExprRef) -> str:
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in self.names:
                continue
            leaf = self._leaf(t)
            if leaf is not None:
                self.names[t.get_id()] = leaf
                continue
            kids = self._closed_parts(t.body()) if z3.is_quantifier(t) else t.children()
            if not expanded:
                stack.append((t, True))
                stack.extend((k, False) for k in kids if k.get_id() not in self.names)
                continue
            name = f"lark.n!{len(self.definitions)}"
            self.definitions.append(f"(define-fun {name} () {t.sort().sexpr()} {self._text(t, ())})")
            self.names[t.get_id()] = name
        return self.names[term.get_id()]

    def _closed_parts(self, body: z3.ExprRef) -> list[z3.ExprRef]:
        """The largest closed subterms of a binder's body (what its text refers to by name)."""
        found, todo, seen = [], [body], set()
        while todo:
            t = todo.pop()
            if t.get_id() in seen:
                continue
            seen.add(t.get_id())
            if not self.free[t.get_id()]:
                found.append(t)
            elif z3.is_quantifier(t):
                todo.append(t.body())
            elif z3.is_app(t):
                todo.extend(t.children())
        return found

    def _text(self, t: z3.ExprRef, binders: tuple[tuple[str, ...], ...]) -> str:
        """The text of `t` where `binders` (outermost first) are the names of the variables bound around it."""
        if binders and not self.free[t.get_id()]:
            return self.names[t.get_id()]
        if z3.is_var(t):
            index = z3.get_var_index(t)
            names = [name for group in binders for name in group]
            name = names[len(names) - 1 - index]
            if names[len(names) - 1 - index:].count(name) > 1:
                raise BadTerm(f"the bound variable {name} is shadowed where it is used")
            return _quoted(name)
        if z3.is_quantifier(t):
            names = tuple(t.var_name(i) for i in range(t.num_vars()))
            bound = " ".join(f"({_quoted(n)} {t.var_sort(i).sexpr()})" for i, n in enumerate(names))
            kind = "lambda" if t.is_lambda() else "forall" if t.is_forall() else "exists"
            return f"({kind} ({bound}) {self._text(t.body(), (*binders, names))})"
        args = " ".join(self._text(k, binders) if binders else self.names[k.get_id()] for k in t.children())
        return f"({self._op(t)} {args})"

    def _op(self, t: z3.ExprRef) -> str:
        decl = t.decl()
        if decl.get_id() not in self.ops:
            if decl.kind() == z3.Z3_OP_CONST_ARRAY:
                op = f"(as const {t.sort().sexpr()})"
            elif decl.kind() == z3.Z3_OP_UNINTERPRETED:
                op = _symbol(decl.name())
            else:
                name = decl.sexpr().split()[1]
                params = decl.params()
                if any(not isinstance(p, int) for p in params):
                    raise BadTerm(f"the operator {decl.sexpr()} has parameters with no certificate form")
                op = f"(_ {name} {' '.join(map(str, params))})" if params else name
            self.ops[decl.get_id()] = op
        return self.ops[decl.get_id()]


def _quoted(name: str) -> str:
    return name if SIMPLE_SYMBOL.fullmatch(name) else f"|{name}|"


def _symbol(name: str) -> str:
    """A free symbol's name in the text: z3's parser reads a declared `exp` (or `log`, `tanh`, ...) as its own
    transcendental function, so those are written `lark.fn!exp` and named back after parsing (`_rebuild`)."""
    return _quoted(_IDEAL + name if name in SOLVER_TRANSCENDENTALS else name)


def _declaration(decl: z3.FuncDeclRef) -> str:
    domain = " ".join(decl.domain(i).sexpr() for i in range(decl.arity()))
    return f"(declare-fun {_symbol(decl.name())} ({domain}) {decl.range().sexpr()})"


def write_terms(terms: list[z3.ExprRef]) -> tuple[list[str], list[TableTerm]]:
    """The declarations and definitions table, and each term's text (a leaf or a definition's name)."""
    printer = _Printer()
    texts = [TableTerm(sort=t.sort().sexpr(), sexpr=printer.term(t)) for t in terms]
    declarations = [_declaration(d) for d in free_declarations(*terms)] if terms else []
    declarations += [f"(declare-fun {_quoted(name)} () {numeral.sort().sexpr()})"
                     for name, numeral in sorted(printer.placeholders.items())]
    names = [d.split()[1] for d in declarations]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise BadTerm(f"the symbols {twice} are declared with two signatures")
    return declarations + printer.definitions, texts


def read_terms(declarations: list[str], terms: list[TableTerm]) -> list[z3.ExprRef]:
    """The z3 terms a table holds, in order; raises BadTerm when the text does not parse."""
    script = [*declarations]
    for k, term in enumerate(terms):
        name = "|" + _TERM.format(k) + "|"
        script += [f"(declare-fun {name} () {term.sort})", f"(assert (= {name} {term.sexpr}))"]
    try:
        parsed = z3.parse_smt2_string(standard_smt2("\n".join(script), rename_internal=False))
    except z3.Z3Exception as exc:
        raise BadTerm(f"the terms do not parse: {exc}") from None
    if len(parsed) != len(terms):
        raise BadTerm(f"{len(terms)} terms, {len(parsed)} read")
    return _rebuilt([a.arg(1) for a in parsed])


def _rebuilt(terms: list[z3.ExprRef]) -> list[z3.ExprRef]:
    """The parsed terms with placeholders read as their numerals and binders rebuilt through the API, children
    before parents, each distinct subterm once."""
    done: dict[int, z3.ExprRef] = {}
    for term in terms:
        stack = [(term, False)]
        while stack:
            t, expanded = stack.pop()
            if t.get_id() in done:
                continue
            kids = [t.body()] if z3.is_quantifier(t) else t.children() if z3.is_app(t) else []
            if not expanded:
                stack.append((t, True))
                stack.extend((k, False) for k in kids if k.get_id() not in done)
                continue
            done[t.get_id()] = _rebuild(t, [done[k.get_id()] for k in kids])
    return [done[t.get_id()] for t in terms]


def _rebuild(t: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
    if z3.is_quantifier(t):
        n = t.num_vars()
        bound = [z3.Const(t.var_name(i), t.var_sort(i)) for i in range(n)]
        names = {(str(b), b.sort().sexpr()) for b in bound}
        if any((str(c), c.sort().sexpr()) in names for c in free_constants(kids[0])):
            raise BadTerm(f"a bound variable of {t.sexpr()[:200]} is also free in its body")
        body = z3.substitute_vars(kids[0], *reversed(bound))
        make = z3.Lambda if t.is_lambda() else z3.ForAll if t.is_forall() else z3.Exists
        return make(bound, body)
    if not z3.is_app(t):
        return t
    decl = t.decl()
    if t.num_args() == 0 and decl.kind() == z3.Z3_OP_UNINTERPRETED:
        numeral = _numeral(decl.name())
        if numeral is not None:
            return numeral
    if decl.kind() == z3.Z3_OP_UNINTERPRETED and decl.name().startswith(_IDEAL):
        decl = z3.Function(decl.name()[len(_IDEAL):], *(decl.domain(i) for i in range(decl.arity())), decl.range())
    elif all(k.eq(c) for k, c in zip(kids, t.children(), strict=True)):
        return t
    args = (z3.Ast * len(kids))(*(k.as_ast() for k in kids))   # the decl as it is: no coercion, any arity
    return z3.z3._to_expr_ref(z3.Z3_mk_app(t.ctx_ref(), decl.ast, len(kids), args), t.ctx)


def free_constants(term: z3.ExprRef) -> list[z3.ExprRef]:
    return [s for s in subterms(term) if z3.is_const(s) and s.decl().kind() == z3.Z3_OP_UNINTERPRETED]


def term_to_json(term: z3.ExprRef) -> Term:
    """One term with its own declarations (a hint)."""
    declarations, (written,) = write_terms([term])
    return Term(sort=written.sort, declarations=declarations, sexpr=written.sexpr)


def term_from_json(term: Term) -> z3.ExprRef:
    """The z3 term; raises BadTerm when the text does not parse."""
    (read,) = read_terms(term.declarations, [term])
    return read


def hint_to_json(hint: object) -> Hint:
    if isinstance(hint, dict):
        return {name: term_to_json(t) for name, t in hint.items()}
    if isinstance(hint, tuple):
        return [term_to_json(t) for t in hint]
    return term_to_json(hint)


def hints_to_json(hints: dict[str, object]) -> dict[str, Hint]:
    return {key: hint_to_json(hint) for key, hint in sorted(hints.items())}


class BadHint(Exception):
    """A recorded hint that does not parse, or is not the shape its key asks for; the message names the key."""


def hint_from_json(key: str, hint: Hint) -> object:
    try:
        if isinstance(hint, dict):
            return {name: term_from_json(t) for name, t in hint.items()}
        if isinstance(hint, list):
            return tuple(term_from_json(t) for t in hint)
        return term_from_json(hint)
    except (BadTerm, z3.Z3Exception, ValueError) as exc:
        raise BadHint(f"hint {key} does not parse: {exc}") from None


def hints_from_json(hints: dict[str, Hint]) -> dict[str, object]:
    return {key: hint_from_json(key, hint) for key, hint in hints.items()}


def replay_provers(lookup: Callable[[str], object | None]) -> Provers:
    """Provers that propose `lookup(key)` for a key, or nothing when it gives None. A hint of another shape
    than its hint source gives (a term, a map of terms, a pair of terms) is a BadHint."""
    def asking_for(shape: type, what: str) -> Callable:
        def propose(key: str, *_asked) -> object | None:
            hint = lookup(key)
            if hint is not None and not isinstance(hint, shape):
                raise BadHint(f"hint {key} is not the {what} its key asks for")
            return hint
        return propose

    term = asking_for(z3.ExprRef, "term")

    def bounds(key: str, _loop) -> list:
        hint = term(key)
        return [] if hint is None else [hint]

    return Provers(inverse=asking_for(dict, "map of terms"), bounds=bounds, reindex=term,
                   split=asking_for(tuple, "pair of terms"))


def same_terms(written: Iterable[z3.ExprRef], read: Iterable[z3.ExprRef]) -> bool:
    """Whether each term read back is the term written (AST identity)."""
    return all(a.eq(b) for a, b in zip(written, read, strict=True))
