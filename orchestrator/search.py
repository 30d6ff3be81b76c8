"""Per-job proof search: alternative proposals for one goal, explored best-first and in parallel. Untrusted.

A goal is something the trusted core needs a hint for (today: a loop's iteration bound, or its exact exit
iteration), with the core's own function from a hint to the obligations that would prove it. Strategies
(provers) propose ordered lists of candidate hints. The search checks the candidates' obligations on
`width` threads through the job's `Checker` (in-process z3, the local pool, or Ray checker actors), best
candidate first. A refuted obligation's counterexample goes back to the strategy that proposed the
candidate, which may propose refinements, at most `max_retries` deep. A strategy marked `fallback` (the
lemma-cache hints and the LLM agent, orchestrator/llm/) is asked only once every candidate before it has
failed, with those failures in `Goal.failures`: heuristics first, an agent when they are stuck.

The winner is the best-ranked candidate whose obligations are all proved — chosen by rank, not by who
finishes first, so the answer does not depend on timing (a refinement ranks right after its parent). Once
it is known, every other candidate is cancelled: no more of its obligations start, a running in-process
z3 query is interrupted, and a query running in a pool worker (local, or behind a Ray checker actor) has its
worker killed and replaced (`lean_pool.cancel`). The job's `Budget` (wall time, solver seconds, cancellation)
stops the search; the goal then stays open, with the budget named as the reason.

Nothing here is trusted (DESIGN §3): the core is told only which candidate to try, and checks it itself.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Protocol

from lean_pool.budget import Budget
from lean_pool.cancel import CURRENT, CancelToken
from lean_pool.checker import PROVED, REFUTED, UNKNOWN, Z3_LOCK, Checker, Obligation, Outcome
from orchestrator import telemetry

POLL_S = 0.5             # how often a waiting search looks at the budget


@dataclass
class Goal:
    kind: str                                          # which strategies answer it ("bounds")
    key: str                                           # the core's name for the hint (certificate key)
    args: tuple                                        # what the strategies are asked about
    obligations: Callable[[object], list[Obligation]]  # the core's: a hint -> what proves it
    timeout_s: float = 120.0                           # per obligation
    failures: list[str] = field(default_factory=list)  # what failed so far (for fallback strategies' prompts)


@dataclass(frozen=True)
class Counterexample:
    obligation: str                     # the name of the refuted obligation
    values: dict[str, object]           # its witness values
    model: object | None = None         # the in-process z3 model, when there is one


class Strategy(Protocol):
    name: str

    def propose(self, goal: Goal) -> list[object]: ...

    def refine(self, goal: Goal, hint: object, counterexample: Counterexample) -> list[object]: ...


class ProverStrategy:
    """A plain prover function `propose(key, *args) -> list of hints` as a strategy; `refine(key, hint,
    counterexample, *args) -> list of hints`, when given, answers counterexamples."""

    def __init__(self, name: str, propose: Callable, refine: Callable | None = None):
        self.name = name
        self._propose = propose
        self._refine = refine

    def propose(self, goal: Goal) -> list[object]:
        return list(self._propose(goal.key, *goal.args) or [])

    def refine(self, goal: Goal, hint: object, counterexample: Counterexample) -> list[object]:
        if self._refine is None:
            return []
        return list(self._refine(goal.key, hint, counterexample, *goal.args) or [])


@dataclass
class Closed:
    hint: object | None                 # the winner's hint, None when the goal stays open
    reason: str | None = None           # why it stays open
    strategy: str | None = None

    @property
    def proved(self) -> bool:
        return self.reason is None


@dataclass
class SearchStats:
    goals: int = 0
    closed: int = 0
    candidates: int = 0      # candidates whose obligations started
    refuted: int = 0         # candidates with a refuted obligation
    retries: int = 0         # candidates proposed in answer to a counterexample
    cancelled: int = 0       # started candidates stopped because another closed the goal (or the budget)
    unexplored: int = 0      # candidates never started because the goal closed first
    stopped: str | None = None

    def to_json(self) -> dict:
        return {"goals": self.goals, "closed": self.closed, "candidates_tried": self.candidates,
                "refuted": self.refuted, "retries": self.retries, "cancelled": self.cancelled,
                "unexplored": self.unexplored, "stopped": self.stopped}


@dataclass(eq=False)
class _Candidate:
    rank: tuple
    hint: object
    strategy: Strategy
    depth: int
    token: CancelToken = field(default_factory=CancelToken)
    obligations: list[Obligation] | None = None
    submitted: int = 0
    proved: int = 0
    state: str = "waiting"              # waiting | running | proved | failed | cancelled
    span: object = None

    def finish(self, state: str) -> None:
        self.state = state
        if state != "proved":
            self.token.cancel()
        if self.span is not None:
            self.span.end({"lark.candidate.state": state})


class Search:
    """One job's search. Use as a context manager (it owns a thread pool); `hook` plugs it into the core.
    `on_close(goal, closed)` hears how each goal ended (the job runner's progress events)."""

    def __init__(self, checker: Checker, strategies: dict[str, list[Strategy]], budget: Budget | None = None,
                 width: int = 2, max_retries: int = 2, on_close: Callable[[Goal, Closed], None] | None = None):
        self.checker = checker
        self.on_close = on_close
        self.strategies = strategies
        self.budget = budget or Budget()
        self.width = max(width, 1)
        self.max_retries = max_retries
        self.stats = SearchStats()
        self._pool = ThreadPoolExecutor(self.width, thread_name_prefix="lark-search")

    def __enter__(self) -> Search:
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def hook(self, kind: str, key: str, args: tuple, obligations: Callable, timeout_s: float) -> list[object]:
        """`semantics.verdict.Provers.search`: the winning hint to try (a one-element list), or none."""
        closed = self.close(Goal(kind, key, args, obligations, timeout_s))
        return [] if closed.hint is None else [closed.hint]

    def close(self, goal: Goal) -> Closed:
        self.stats.goals += 1
        with telemetry.span("lark.search.goal", {"lark.goal.kind": goal.kind, "lark.goal.key": goal.key}) as span:
            closed = self._close(goal)
            span.set_attributes({"lark.goal.proved": closed.proved, "lark.goal.reason": closed.reason or ""})
        self.stats.closed += closed.proved
        if self.on_close is not None:
            self.on_close(goal, closed)
        return closed

    def _close(self, goal: Goal) -> Closed:
        alive: list[_Candidate] = []
        strategies = list(enumerate(self.strategies.get(goal.kind, [])))
        fallbacks = [(s, strategy) for s, strategy in strategies if getattr(strategy, "fallback", False)]
        for s, strategy in strategies:
            if (s, strategy) not in fallbacks:
                alive += self._proposals(goal, s, strategy)
        running: dict[Future, tuple[_Candidate, Obligation]] = {}
        done: set[Future] = set()
        deferred: list[tuple[_Candidate, Counterexample]] = []   # fallback refinements, asked outside the lock
        while True:
            # Everything but the wait holds Z3_LOCK: strategies and the core's obligation builder make terms
            # in z3's shared main context, and so may the search threads (translating, caching, replaying).
            with Z3_LOCK:
                for future in done:
                    candidate, obligation = running.pop(future)
                    self._answer(goal, alive, candidate, obligation, future.result(), deferred)
                alive.sort(key=lambda c: c.rank)
                winner = self._winner(alive)
                stop = self.budget.stop_reason()
                if winner is None and stop is None:
                    self._submit(goal, alive, running)
            if winner is not None:
                self._cancel(alive, running, winner)
                return Closed(winner.hint, None, winner.strategy.name)
            if stop is not None:
                self.stats.stopped = stop
                self._cancel(alive, running, None)
                return Closed(None, f"search stopped: {stop}")
            if not running and deferred:     # a fallback (an agent) answers its counterexample: a network call
                candidate, counterexample = deferred.pop(0)
                alive += self._refinements(goal, candidate, counterexample, locked=False)
                done = set()
                continue
            if not running and fallbacks:    # every candidate so far failed: ask the next fallback
                alive += self._proposals(goal, *fallbacks.pop(0))
                done = set()
                continue
            if not running:
                tried = sum(c.state == "failed" for c in alive)
                return Closed(None, f"no candidate for {goal.key} was proved ({tried} tried)")
            done, _ = wait(list(running), timeout=POLL_S, return_when=FIRST_COMPLETED)

    def _proposals(self, goal: Goal, s: int, strategy: Strategy) -> list[_Candidate]:
        """A strategy's first candidates. A fallback is asked without Z3_LOCK (an agent waits on the network
        and takes the lock itself around the terms it builds)."""
        locked = not getattr(strategy, "fallback", False)
        hints = self._ask(lambda: strategy.propose(goal), locked)
        return [_Candidate((n, s), hint, strategy, 0) for n, hint in enumerate(hints)]

    def _refinements(self, goal: Goal, candidate: _Candidate, counterexample: Counterexample,
                     locked: bool = True) -> list[_Candidate]:
        hints = self._ask(lambda: candidate.strategy.refine(goal, candidate.hint, counterexample), locked)
        self.stats.retries += len(hints)
        return [_Candidate((*candidate.rank, n), hint, candidate.strategy, candidate.depth + 1)
                for n, hint in enumerate(hints)]

    @staticmethod
    def _winner(alive: list[_Candidate]) -> _Candidate | None:
        """The best-ranked candidate, once it is proved and every better one has failed."""
        for candidate in alive:
            if candidate.state == "proved":
                return candidate
            if candidate.state != "failed":
                return None
        return None

    def _ask(self, call: Callable[[], list[object]], locked: bool = True) -> list[object]:
        """A strategy's answer; strategies build z3 terms in the shared main context, hence the lock. A
        strategy that fails proposes nothing (it is untrusted, its failure is not the job's)."""
        try:
            if not locked:
                return list(call())
            with Z3_LOCK:
                return call()
        except Exception:  # noqa: BLE001 - an untrusted prover's bug costs its proposals, nothing else
            return []

    def _submit(self, goal: Goal, alive: list[_Candidate], running: dict) -> None:
        """Start obligations, best candidate first, until `width` are running."""
        for candidate in alive:
            if len(running) >= self.width:
                return
            if candidate.state not in ("waiting", "running"):
                continue
            if candidate.obligations is None:
                candidate.obligations = self._ask(lambda c=candidate: goal.obligations(c.hint))
                if not candidate.obligations:
                    candidate.finish("failed")
                    continue
                self.stats.candidates += 1
                candidate.state = "running"
                candidate.span = telemetry.start("lark.search.candidate", {
                    "lark.goal.key": goal.key, "lark.candidate.rank": str(candidate.rank),
                    "lark.candidate.strategy": candidate.strategy.name, "lark.candidate.depth": candidate.depth})
            while candidate.submitted < len(candidate.obligations) and len(running) < self.width:
                obligation = candidate.obligations[candidate.submitted]
                candidate.submitted += 1
                run = contextvars.copy_context()
                future = self._pool.submit(run.run, self._check, candidate, obligation, goal.timeout_s)
                running[future] = (candidate, obligation)

    def _check(self, candidate: _Candidate, obligation: Obligation, timeout_s: float) -> Outcome:
        """On a search thread: one obligation, under the candidate's cancellation token and span."""
        if candidate.token.cancelled:
            return Outcome(UNKNOWN, self.checker.name, 0.0, reason="cancelled")
        CURRENT.set(candidate.token)
        return telemetry.within(candidate.span, self.checker.check, obligation, timeout_s)

    def _answer(self, goal: Goal, alive: list[_Candidate], candidate: _Candidate, obligation: Obligation,
                outcome: Outcome, deferred: list) -> None:
        if candidate.state != "running":
            return
        if outcome.status == PROVED:
            candidate.proved += 1
            if candidate.proved == len(candidate.obligations):
                candidate.finish("proved")
            return
        candidate.finish("failed")
        goal.failures.append(f"{candidate.strategy.name} proposed {_shown(candidate.hint)}: {obligation.name} "
                             f"{outcome.status}" + (f", counterexample {dict(outcome.model)}" if outcome.model else
                                                     f" ({outcome.reason})" if outcome.reason else ""))
        if outcome.status != REFUTED:
            return
        self.stats.refuted += 1
        if candidate.depth >= self.max_retries:
            return
        counterexample = Counterexample(obligation.name, dict(outcome.model or {}), outcome.z3_model)
        if getattr(candidate.strategy, "fallback", False):
            deferred.append((candidate, counterexample))
        else:
            alive += self._refinements(goal, candidate, counterexample)

    def _cancel(self, alive: list[_Candidate], running: dict, winner: _Candidate | None) -> None:
        """Stop every candidate but the winner, and wait until their running obligations have returned: a
        search thread still running after the goal closes would touch z3's main context (translating its model,
        replaying a foreign refutation) while the core uses it without the lock. Interrupted in-process
        queries return at once; a remote one within its own timeout."""
        for candidate in alive:
            if candidate is winner or candidate.state in ("proved", "failed"):
                continue
            if candidate.state == "running":
                self.stats.cancelled += 1
            else:
                self.stats.unexplored += 1
            candidate.finish("cancelled")
        if running:
            wait(list(running))


def _shown(hint: object, limit: int = 300) -> str:
    """A hint as text for a prompt (z3 terms print as s-expressions), cut to `limit` characters."""
    text = str(hint)
    return text if len(text) <= limit else text[:limit] + "..."
