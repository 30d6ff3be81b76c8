"""cvc5 as the independent second checker (DESIGN §7): it reads an obligation only as SMT-LIB text.

An obligation's canonical text is z3's `to_smt2()`, which is not quite standard SMT-LIB 2.6 in two ways:
a symbol such as `tid.x'` (the second thread of a race) is printed unquoted although `'` is not a symbol
character, and division by a constant is printed with z3's internal operators `bvudiv_i`, `bvurem_i`,
`bvsdiv_i`, `bvsrem_i`, `bvsmod_i`, which z3 defines to equal the standard ones on every input, a zero
divisor included. `standard_smt2` rewrites exactly these, token by token, so that z3 and cvc5 can be
handed the same standard text. A fresh cvc5 instance decides each obligation (STYLE 9).

One clash is the solvers' own: under logic ALL cvc5 has transcendental functions built in (`exp`, `sin`,
`sqrt`, ...) and refuses a declaration of the same name, and z3's parser quietly reads a declared `exp`,
`log`, `tanh`, `sin` or `cos` as its own transcendental function, while the semantics declares its ideal
functions as uninterpreted functions with exactly those names. `unshadow` renames such a declared function
apart, everywhere in the text, to a fresh name; renaming an uninterpreted symbol does not change
satisfiability, and the text then means to either solver what it meant to the run that proved it.
"""

from __future__ import annotations

import re
import time

from lean_pool.checker import PROVED, REFUTED, UNKNOWN, Obligation, Outcome

# One lexeme each: a quoted symbol, a string, a comment, a parenthesis, white space, any other atom; the
# final `.` keeps malformed input intact for the solver to reject.
_LEXEME = re.compile(r'\|[^|]*\||"(?:[^"]|"")*"|;[^\n]*|[()]|\s+|[^\s()|";]+|.', re.DOTALL)
_SIMPLE_SYMBOL = re.compile(r"[A-Za-z~!@$%^&*_\-+=<>.?/][0-9A-Za-z~!@$%^&*_\-+=<>.?/]*")
_NOT_A_SYMBOL = tuple("0123456789#:|\";()") + (" ", "\t", "\n", "\r")
Z3_INTERNAL_OPERATORS = {f"bv{op}_i": f"bv{op}" for op in ("udiv", "urem", "sdiv", "srem", "smod")}
SOLVER_TRANSCENDENTALS = frozenset({
    "exp", "sin", "cos", "tan", "csc", "sec", "cot", "arcsin", "arccos", "arctan", "arccsc", "arcsec", "arccot",
    "sqrt",                                                                                        # cvc5's
    "log", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"})              # z3's too


def standard_smt2(text: str, rename_internal: bool = True) -> str:
    """`text` with every symbol that needs it quoted and (unless told not to) z3's internal operators
    renamed to their standard equals."""
    out = []
    for lexeme in _LEXEME.findall(text):
        if not lexeme.startswith(_NOT_A_SYMBOL):
            if rename_internal:
                lexeme = Z3_INTERNAL_OPERATORS.get(lexeme, lexeme)
            if not _SIMPLE_SYMBOL.fullmatch(lexeme):
                lexeme = f"|{lexeme}|"
        out.append(lexeme)
    return "".join(out)


def unshadow(text: str) -> str:
    """`text` with each declared function named like a solver's built-in renamed to an unused name."""
    lexemes = _LEXEME.findall(text)
    atoms = [x for x in lexemes if not x.isspace()]
    declared = {atoms[i + 1] for i, x in enumerate(atoms[:-1]) if x in ("declare-fun", "declare-const")}
    renamed = {}
    for name in sorted(declared & SOLVER_TRANSCENDENTALS):
        fresh = f"{name}.ideal"
        while fresh in atoms:
            fresh += "'"
        renamed[name] = f"|{fresh}|"
    return "".join(renamed.get(x, x) for x in lexemes)


# cvc5's own settings, then with `nl-cov` (cylindrical algebraic coverings); the first gets this share of the time
STRATEGIES: tuple[dict[str, str], ...] = ({}, {"nl-cov": "true"})
FIRST_SHARE, FIRST_MOST_S = 0.25, 10.0


class Cvc5Checker:
    """cvc5 in-process through its Python API, logic ALL, a fixed seed and a per-query time limit.
    Only unsat counts: a model from cvc5 is never reported (z3's models are the ones replayed)."""

    name = "cvc5"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def check(self, obligation: Obligation, timeout_s: float) -> Outcome:
        return self.check_text(obligation.smt2(), timeout_s)

    def check_text(self, text: str, timeout_s: float) -> Outcome:
        """Unsat by either strategy of `STRATEGIES`, in order (the first with a share of the time): cvc5's default
        settles linear goals and congruences with divisions at once where `nl-cov` can spend minutes, and `nl-cov`
        proves nonlinear real goals the default times out on. Any unsat is a proof."""
        start = time.monotonic()
        outcome = Outcome(UNKNOWN, self.name, 0.0, reason="cvc5: not run")
        for n, options in enumerate(STRATEGIES):
            left = timeout_s - (time.monotonic() - start)
            share = left if n == len(STRATEGIES) - 1 else min(left * FIRST_SHARE, FIRST_MOST_S)
            outcome = self._check(text, max(share, 0.001), options)
            if outcome.status in (PROVED, REFUTED):
                break
        return Outcome(outcome.status, self.name, time.monotonic() - start, reason=outcome.reason)

    def _check(self, text: str, timeout_s: float, options: dict[str, str]) -> Outcome:
        # Imported on first use: `lark verify` reads this module for `standard_smt2` (certificate texts) but
        # asks cvc5 nothing, and its import is a measurable part of a cold start (bench/cold_start.py).
        import cvc5

        start = time.monotonic()
        terms = cvc5.TermManager()
        solver = cvc5.Solver(terms)
        solver.setOption("tlimit-per", str(max(int(timeout_s * 1000), 1)))
        solver.setOption("seed", str(self.seed))
        for option, value in options.items():
            solver.setOption(option, value)
        solver.setLogic("ALL")
        symbols = cvc5.SymbolManager(terms)
        parser = cvc5.InputParser(solver, symbols)
        parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, unshadow(standard_smt2(text)), "obligation")
        try:
            while not (command := parser.nextCommand()).isNull():
                if command.getCommandName() != "check-sat":
                    command.invoke(solver, symbols)
            result = solver.checkSat()
        except RuntimeError as exc:
            return Outcome(UNKNOWN, self.name, time.monotonic() - start, reason=f"cvc5 cannot read it: {exc}")
        seconds = time.monotonic() - start
        if result.isUnsat():
            return Outcome(PROVED, self.name, seconds)
        if result.isSat():
            return Outcome(REFUTED, self.name, seconds)
        return Outcome(UNKNOWN, self.name, seconds, reason=f"cvc5: {result.getUnknownExplanation()}")
