"""The logical rules of the kernel: each makes a `Theorem` from its inputs or raises `Refused`.

Every docstring states the rule's theorem, with Γ, Δ the premises' hypotheses. The only rule that asks a
solver is `by_smt`; every other rule checks its inputs structurally (hash-consed z3 ASTs: `a.eq(b)` is
identity). Free symbols of a statement are universally quantified, so `instantiate` may replace one.
"""

from __future__ import annotations

import z3

from lean_pool.checker import PROVED, Checker, Obligation
from semantics import preconditions
from semantics.axioms import ground_facts
from semantics.proof.theorem import Refused, Theorem, _mint, rule
from semantics.purify import purified


def negation(claim: z3.BoolRef) -> z3.BoolRef:
    """¬claim, written as the solver is asked it: Not(Not(F)) is F itself, so a claim stated as "this
    failure formula F cannot happen" is checked as the very obligation F."""
    return claim.arg(0) if z3.is_not(claim) else z3.Not(claim)


@rule
def by_smt(claim: z3.BoolRef, checker: Checker, timeout_s: float, name: str, prop: str,
           with_facts: bool = False, witness: dict | None = None, purify: bool = False) -> Theorem:
    """⊢ claim when the checker finds ¬claim unsat; with `with_facts`, ⊢ claim under the axiom instances
    A that `semantics.axioms.ground_facts` gives for ¬claim (the facts of the ideal functions it applies),
    when ¬claim ∧ A is unsat. With `purify`, the formula asked is `semantics.purify.purified` of that one:
    equisatisfiable (its theorem), so unsat of one is unsat of the other, and a model of it is one of the
    formula.

    The obligation's formula is `negation(claim)`, and with facts `z3.And(¬claim, *A)` (even when A is empty:
    the text equivalence obligations have always had). The instances come from the trusted axiom table,
    never from the caller, and are listed in the theorem. Anything but `proved` (a model, `unknown`, a
    timeout) raises `Refused` carrying the obligation and its outcome. The instances of the task's input
    preconditions at the reads ¬claim mentions (`semantics.preconditions`) join A in either case."""
    negated = negation(claim)
    facts = tuple(ground_facts(negated)) if with_facts else ()
    facts += preconditions.facts(negated)
    formula = z3.And(negated, *facts) if with_facts or facts else negated
    if purify:
        formula = purified(formula)
    ob = Obligation(name, prop, formula, witness or {})
    outcome = checker.check(ob, timeout_s)
    if outcome.status != PROVED:
        raise Refused(f"by_smt: {name}: {outcome.status}", ob, outcome)
    return _mint(claim, "by_smt", axioms=facts, evidence=((ob, outcome),))


@rule
def assume(p: z3.BoolRef) -> Theorem:
    """{p} ⊢ p. The hypothesis stays in every theorem built from this one until discharged by `mp` of an
    implication (a theorem with hypotheses never `states` a goal)."""
    return _mint(p, "assume", hypotheses=(p,))


@rule
def mp(implication: Theorem, premise: Theorem) -> Theorem:
    """From Γ ⊢ a → b and Δ ⊢ a, conclude Γ ∪ Δ ⊢ b (modus ponens)."""
    c = implication.conclusion
    if not z3.is_implies(c):
        raise Refused(f"mp: {c} is not an implication")
    if not c.arg(0).eq(premise.conclusion):
        raise Refused(f"mp: the premise {premise.conclusion} is not the antecedent {c.arg(0)}")
    return _mint(c.arg(1), "mp", (implication, premise))


@rule
def disch(hypothesis: z3.BoolRef, theorem: Theorem) -> Theorem:
    """From Γ ⊢ b conclude Γ \\ {a} ⊢ a → b (the deduction theorem: a hypothesis becomes an antecedent)."""
    rest = tuple(h for h in theorem.hypotheses if not h.eq(hypothesis))
    return _mint(z3.Implies(hypothesis, theorem.conclusion), "disch", (theorem,), rest, theorem.axioms,
                 replace_context=True)


@rule
def conj(*theorems: Theorem) -> Theorem:
    """From Γ_i ⊢ a_i conclude ∪Γ_i ⊢ a_1 ∧ … ∧ a_n (n ≥ 1)."""
    if not theorems:
        raise Refused("conj: no conjuncts")
    return _mint(z3.And(*(t.conclusion for t in theorems)), "conj", theorems)


def _symbol(x: z3.ExprRef) -> bool:
    return z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED


@rule
def instantiate(theorem: Theorem, x: z3.ExprRef, term: z3.ExprRef) -> Theorem:
    """From Γ ⊢ P(x) under axioms A(x), with x a free symbol (held for every value of x), conclude
    Γ[x:=t] ⊢ P(t) under A(t). x must be an uninterpreted constant and t of its sort."""
    if not _symbol(x):
        raise Refused(f"instantiate: {x} is not a free symbol")
    if not x.sort().eq(term.sort()):
        raise Refused(f"instantiate: {term} is a {term.sort()}, {x} a {x.sort()}")

    def put(f: z3.BoolRef) -> z3.BoolRef:
        return z3.substitute(f, (x, term))
    return _mint(put(theorem.conclusion), "instantiate", (theorem,), tuple(map(put, theorem.hypotheses)),
                 tuple(map(put, theorem.axioms)), replace_context=True)


@rule
def simplified(term: z3.ExprRef, under: z3.BoolRef | None = None) -> Theorem:
    """⊢ simplify(t) = t (⊢ under → simplify(t) = t with `under`), for z3's simplifier with its default rules
    but sign extensions kept. The simplifier (z3's rewriter) rewrites a term to an equal one; it is the very
    rewriter z3 runs on every obligation before solving it, so this trusts nothing `by_smt` with z3 does not.
    (Asked as an obligation instead, the equation holds terms under binders — comprehension bodies — which
    cvc5 cannot read in the certificate's logic.)"""
    equation = z3.simplify(term, elim_sign_ext=False) == term
    return _mint(equation if under is None else z3.Implies(under, equation), "simplified")


def _equation(theorem: Theorem, rule: str) -> tuple[z3.ExprRef, z3.ExprRef]:
    c = theorem.conclusion
    if not z3.is_eq(c):
        raise Refused(f"{rule}: {c} is not an equation")
    return c.arg(0), c.arg(1)


@rule
def sym(theorem: Theorem) -> Theorem:
    """From Γ ⊢ a = b conclude Γ ⊢ b = a; from Γ ⊢ h → a = b conclude Γ ⊢ h → b = a."""
    c = theorem.conclusion
    if z3.is_implies(c) and z3.is_eq(c.arg(1)):
        a, b = c.arg(1).children()
        return _mint(z3.Implies(c.arg(0), b == a), "sym", (theorem,))
    a, b = _equation(theorem, "sym")
    return _mint(b == a, "sym", (theorem,))


@rule
def trans(first: Theorem, second: Theorem) -> Theorem:
    """From Γ ⊢ a = b and Δ ⊢ b = c conclude Γ ∪ Δ ⊢ a = c."""
    a, b = _equation(first, "trans")
    b2, c = _equation(second, "trans")
    if not b.eq(b2):
        raise Refused(f"trans: {b} and {b2} differ")
    return _mint(a == c, "trans", (first, second))


@rule
def substitute(equation: Theorem, theorem: Theorem, x: z3.ExprRef | None = None,
               template: z3.BoolRef | None = None) -> Theorem:
    """From Γ ⊢ a = b and Δ ⊢ P(a) conclude Γ ∪ Δ ⊢ P(b) (Leibniz: equals for equals).

    P is `template` with the symbol x as its hole; the kernel checks that P(a) is structurally the
    premise (or P(b), concluding P(a): equality is symmetric, and z3 may order the arguments of = either
    way). Without a template, every occurrence of a is replaced by b."""
    a, b = _equation(equation, "substitute")
    if template is None:
        return _mint(z3.substitute(theorem.conclusion, (a, b)), "substitute", (equation, theorem))
    if x is None or not _symbol(x) or not x.sort().eq(a.sort()):
        raise Refused(f"substitute: the hole {x} is not a free symbol of sort {a.sort()}")
    for old, new in ((a, b), (b, a)):   # either way round: z3 orders the arguments of = itself
        if z3.substitute(template, (x, old)).eq(theorem.conclusion):
            return _mint(z3.substitute(template, (x, new)), "substitute", (equation, theorem))
    raise Refused(f"substitute: {theorem.conclusion} is not the template at {a} or {b}")


@rule
def substitute_under(equation: Theorem, theorem: Theorem, target: z3.BoolRef) -> Theorem:
    """From Γ ⊢ h → a = b and Δ ⊢ ¬(h ∧ R(a)) conclude Γ ∪ Δ ⊢ ¬(h ∧ R(b)), for the target ¬(h ∧ R(b)): equals
    for equals where they are equal only under h, in a statement that is itself about h (the form of every
    obligation: "the thread performs the access and ..."). R(a) is R(b) with every b replaced by a, checked
    structurally; h is left as it is (it may mention b: a thread coordinate that h fixes). Either way round:
    equality is symmetric, and z3 may order the arguments of = itself. (If h ∧ R(b) held, a = b would, so R(a),
    which is R(b) with b replaced by a term of the same value, would hold too.) The equation may be a
    conjunction h → a_1 = b_1 ∧ … ∧ a_n = b_n (`sums_apart` of many Sums): every b_i is replaced by its a_i at
    once, each equation the same way round."""
    c = equation.conclusion
    if not (z3.is_implies(c) and (z3.is_eq(c.arg(1)) or z3.is_and(c.arg(1)))):
        raise Refused(f"substitute_under: {c} is not h → a = b")
    h, equations = c.arg(0), c.arg(1).children() if z3.is_and(c.arg(1)) else [c.arg(1)]
    if not all(z3.is_eq(e) for e in equations):
        raise Refused(f"substitute_under: {c} is not h → a conjunction of equations")
    if not (z3.is_not(target) and z3.is_and(target.arg(0)) and target.arg(0).num_args() == 2
            and target.arg(0).arg(0).eq(h)):
        raise Refused(f"substitute_under: the target is not ¬(h ∧ R) for h = {h}")
    premise = theorem.conclusion
    if not (z3.is_not(premise) and z3.is_and(premise.arg(0)) and premise.arg(0).num_args() == 2
            and premise.arg(0).arg(0).eq(h)):
        raise Refused("substitute_under: the premise is not ¬(h ∧ R) for the same h")
    pairs = [tuple(e.children()) for e in equations]
    for swap in (((b, a) for a, b in pairs), pairs):   # either way round: z3 orders the arguments of = itself
        if z3.substitute(target.arg(0).arg(1), *swap).eq(premise.arg(0).arg(1)):
            return _mint(target, "substitute_under", (equation, theorem))
    raise Refused("substitute_under: the premise is not ¬(h ∧ R) with b replaced by a (or a by b)")
