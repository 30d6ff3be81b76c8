"""The LLM prover: a ReAct loop that proposes hints for goals the heuristics left open. Untrusted.

It is a fallback `Strategy` of orchestrator/search.py: the search asks it only after every heuristic
candidate for a goal failed, and checks whatever it proposes with the core's own obligations. The prompt
holds the goal (kind, key, the question and its names), the PTX around the lines the key names, the
reference's source, and what failed so far (the heuristics' candidates and the counterexamples of refuted
ones). The model answers one `Answer` (JSON schema); a malformed one is answered with the parse error and
asked again, a refuted one with its counterexample (`refine`), within the job's budget of calls, tokens
and wall time and `per_goal` calls per goal. Whatever goes wrong (an endpoint error, a timeout, a budget
spent) costs the goal its proposal: the goal stays open, and the verdict can only stay `unknown`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lean_pool.checker import Z3_LOCK
from orchestrator.llm.chat import Chat, EndpointError, Usage
from orchestrator.llm.goals import KINDS, hint_of
from orchestrator.llm.proposal import ProposalError, parse_answer, response_format
from orchestrator.search import Counterexample, Goal

CONTEXT_LINES = 12            # PTX lines shown before a named line (and a third of it after)
MAX_REFERENCE_CHARS = 4000
MAX_FAILURES = 4

SYSTEM = """You help a GPU-kernel verifier. It is stuck on one goal and asks you for a hint.
Answer with one JSON object {"thought": "...", "terms": [{"name": ..., "expr": ...}]}.
Each expr uses only the names given, integer constants, + - * // % and parentheses. Arithmetic is unsigned
64-bit: // and % are unsigned, - wraps. Names are spelled as shown (tid.x is tid_x).
Your hint is checked by a solver; a wrong hint is rejected, and you may get a counterexample to try again."""


@dataclass
class Context:
    """What the prompt shows besides the goal: the kernel's PTX lines and the reference's source."""
    ptx: list[str] = field(default_factory=list)
    reference: str | None = None
    launch: str = ""

    def around(self, key: str) -> str:
        """The PTX lines around each line the goal's key names (`line123`), numbered; else the head."""
        named = [int(n) for n in re.findall(r"line(\d+)", key)] or [1]
        shown: dict[int, str] = {}
        for line in named:
            for n in range(max(1, line - CONTEXT_LINES), min(len(self.ptx), line + CONTEXT_LINES // 3) + 1):
                shown[n] = self.ptx[n - 1]
        return "\n".join(f"{n:5}  {text}" for n, text in sorted(shown.items()))


class Agent:
    """The LLM strategy of one job (`fallback`: asked only once the heuristics failed)."""

    name = "llm"
    fallback = True

    def __init__(self, chat: Chat, usage: Usage, context: Context):
        self.chat = chat
        self.usage = usage
        self.context = context
        # Keyed by id(), each entry holding its goal or hint: a key object kept alive cannot have its id
        # reused by a later goal (which would inherit a spent per-goal budget or another goal's conversation).
        self._answers: dict[int, tuple[object, str]] = {}          # id(hint) -> (hint, the answer's text)
        self._talks: dict[int, tuple[Goal, list[dict]]] = {}       # id(goal) -> (goal, its conversation)
        self._calls: dict[int, int] = {}                           # id(goal) -> calls made for it

    def propose(self, goal: Goal) -> list[object]:
        if goal.kind not in KINDS:
            return []
        with Z3_LOCK:
            prompt = self._prompt(goal)
        self._talks[id(goal)] = (goal, [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}])
        return self._ask(goal)

    def refine(self, goal: Goal, hint: object, counterexample: Counterexample) -> list[object]:
        if id(goal) not in self._talks:
            return []
        self._talks[id(goal)][1].append({"role": "user", "content": f"Rejected: the obligation "
                                         f"`{counterexample.obligation}` has the counterexample "
                                         f"{counterexample.values}. Propose a corrected hint."})
        return self._ask(goal)

    def _ask(self, goal: Goal) -> list[object]:
        """Call until a well-formed proposal comes back (the parse error is fed back), or the goal's or the
        job's budget is spent. A proposal is a list of one hint."""
        talk = self._talks[id(goal)][1]
        while self._calls.get(id(goal), 0) < self.usage.config.per_goal:
            self._calls[id(goal)] = self._calls.get(id(goal), 0) + 1
            try:
                self.usage.admit()
                reply = self.chat.complete(talk, response_format())
            except EndpointError:
                return []
            self.usage.charge(reply.tokens)
            talk.append({"role": "assistant", "content": reply.text})
            try:
                answer = parse_answer(reply.text)
                with Z3_LOCK:
                    hint = hint_of(goal.kind, goal.args, answer)
            except ProposalError as exc:
                talk.append({"role": "user", "content": f"Malformed: {exc}. Answer again."})
                continue
            self._answers[id(hint)] = (hint, reply.text)
            return [hint]
        return []

    def answer_of(self, hint: object) -> str | None:
        """The text of the answer that proposed `hint` (the learning loop stores it), None for another's."""
        entry = self._answers.get(id(hint))
        return entry[1] if entry is not None and entry[0] is hint else None

    def _prompt(self, goal: Goal) -> str:
        kind = KINDS[goal.kind]
        names = kind.names(goal.args)
        parts = [f"Goal kind: {goal.kind}", f"Key: {goal.key}", f"Launch: {self.context.launch}",
                 kind.question(goal.args),
                 "Names: " + ", ".join(f"{n} ({v.size()} bits)" for n, v in sorted(names.items())),
                 "Terms to give: " + ", ".join(sorted(kind.wanted(goal.args))),
                 f"PTX:\n{self.context.around(goal.key)}"]
        if self.context.reference:
            parts.append(f"Reference (PyTorch):\n{self.context.reference[:MAX_REFERENCE_CHARS]}")
        if goal.failures:
            parts.append("Already failed:\n" + "\n".join(goal.failures[-MAX_FAILURES:]))
        return "\n\n".join(parts)
