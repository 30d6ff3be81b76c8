"""z3 terms as certificate text: obligations, and prover hints to and from JSON and the provers replaying them.

An obligation is certified by `obligation_text`: the declarations of its free symbols sorted by name, then
`(assert <formula.sexpr()>)`. Unlike `Obligation.smt2()` (z3's benchmark printer, whose `let` binders are
named after internal AST ids and chosen by reference counts, both of which depend on what the process did
before), this text depends on the formula alone, so its SHA-256 is the same in every process.

A hint must come back as the very same z3 term, because `lark check` substitutes it into obligations whose
SHA-256 must equal the certified ones. z3's own printer and parser round-trip exactly (its internal
`bvudiv_i` and friends included), so a term is stored as `sexpr()` plus the declarations of its free
symbols and read back with `z3.parse_smt2_string`; only symbol quoting is standardised on the way in.
Replaying is how both the writer and `lark check` obtain a proof: provers that propose exactly the recorded
hint for a key, and nothing for any other key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import z3

from lean_pool.checker import Obligation
from lean_pool.cvc5_checker import standard_smt2
from orchestrator.cert_schema import Hint, Term
from semantics.terms import subterms
from semantics.verdict import Provers

_HOLE = "|lark.term|"   # the one name a parsed text binds, so the term can be read off its definition


def free_declarations(term: z3.ExprRef) -> list[z3.FuncDeclRef]:
    """The uninterpreted constants and functions `term` mentions, in a fixed order (by name)."""
    found = {t.decl().name(): t.decl() for t in subterms(term)
             if z3.is_app(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED}
    return [found[name] for name in sorted(found)]


def obligation_text(ob: Obligation) -> tuple[str, str]:
    """The obligation's certified text and its SHA-256."""
    declarations = [d.sexpr() for d in free_declarations(ob.formula)]
    text = "\n".join([*declarations, f"(assert {ob.formula.sexpr()})", "(check-sat)", ""])
    return text, hashlib.sha256(text.encode()).hexdigest()


def term_to_json(term: z3.ExprRef) -> Term:
    return Term(sort=term.sort().sexpr(), declarations=[d.sexpr() for d in free_declarations(term)],
                sexpr=term.sexpr())


def term_from_json(term: Term) -> z3.ExprRef:
    """The z3 term; raises z3.Z3Exception when the text does not parse."""
    text = "\n".join([*term.declarations, f"(declare-fun {_HOLE} () {term.sort})",
                      f"(assert (= {_HOLE} {term.sexpr}))"])
    (definition,) = z3.parse_smt2_string(standard_smt2(text, rename_internal=False))
    return definition.arg(1)


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
    except (z3.Z3Exception, ValueError) as exc:
        raise BadHint(f"hint {key} does not parse: {exc}") from None


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
