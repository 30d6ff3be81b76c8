"""One job's LLM provers, plugged into its search: the agent, the learning loop, and `inverse` searched.
Untrusted, and off unless `lark verify --llm` (or a caller) passes an `LLMConfig`.

The learning loop: when a goal closes with an agent's proposal, the proposal's text is stored under the
goal's canonical key (`goals.canonical_key`) in a diskcache beside the lemma cache; the next kernel with the
same stuck goal gets it back from `Learned`, a fallback asked before the agent, and the search checks it
again like any candidate: a stale or poisoned entry costs one failed candidate, never a wrong verdict.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from lean_pool.cache import DiskLemmaStore, LemmaStore, lemma_dir
from lean_pool.checker import Z3_LOCK
from orchestrator.llm import inverse
from orchestrator.llm.agent import Agent, Context
from orchestrator.llm.chat import Chat, LLMConfig, OpenAIChat, Usage
from orchestrator.llm.goals import KINDS, canonical_key, hint_of
from orchestrator.llm.proposal import ProposalError, parse_answer
from orchestrator.search import Closed, Goal, Search
from semantics.verdict import Provers


def proposal_dir() -> Path:
    """Beside the lemma cache: $LARK_CACHE_DIR/llm-proposals, else ~/.cache/lark/llm-proposals."""
    return lemma_dir().parent / "llm-proposals"


class Learned:
    """Accepted proposals of earlier jobs, replayed as candidates (`fallback`, before the agent)."""

    name = "learned"
    fallback = True

    def __init__(self, store: LemmaStore):
        self.store = store

    def propose(self, goal: Goal) -> list[object]:
        if goal.kind not in KINDS:
            return []
        with Z3_LOCK:
            entry = self.store.get(canonical_key(goal.kind, goal.key, goal.args))
            if entry is None:
                return []
            try:
                return [hint_of(goal.kind, goal.args, parse_answer(entry["answer"]))]
            except (ProposalError, KeyError, TypeError):
                return []

    def refine(self, goal: Goal, hint: object, counterexample) -> list[object]:
        return []

    def learn(self, goal: Goal, closed: Closed, agent: Agent) -> None:
        text = agent.answer_of(closed.hint) if closed.strategy == agent.name else None
        if text is not None:
            with Z3_LOCK:
                key = canonical_key(goal.kind, goal.key, goal.args)
            self.store.put(key, {"kind": goal.kind, "key": goal.key, "answer": text})


class LLMProvers:
    """Built per job from a config; `plug` adds the fallbacks to a search after intake, `stats` reports."""

    def __init__(self, config: LLMConfig, chat: Chat | None = None, store: LemmaStore | None = None):
        self.config = config
        self.chat = chat or OpenAIChat(config)
        self.store = store if store is not None else DiskLemmaStore(proposal_dir())   # (an empty store is falsy)
        self.usage = Usage(config)

    def plug(self, search: Search, provers: Provers, prepared) -> Provers:
        """Fallbacks for every searched goal kind, `inverse` searched too; returns the job's provers."""
        agent = Agent(self.chat, self.usage, context_of(prepared))
        learned = Learned(self.store)
        strategies = dict(search.strategies)
        strategies["inverse"] = [inverse.heuristic_strategy(provers.inverse)]
        for kind in KINDS:
            strategies[kind] = [*strategies.get(kind, []), learned, agent]
        search.strategies = strategies
        heard = search.on_close

        def on_close(goal: Goal, closed: Closed) -> None:
            learned.learn(goal, closed, agent)
            if heard is not None:
                heard(goal, closed)
        search.on_close = on_close
        return replace(provers, inverse=inverse.searched(search.hook, provers.inverse, prepared.problem.launch))

    def stats(self) -> dict:
        return self.usage.stats()


def context_of(prepared) -> Context:
    """The PTX text and the reference's source of a prepared task, for prompts."""
    reference = prepared.task.reference
    source = None
    if reference is not None:
        try:
            source = Path(reference.source).read_text(encoding="utf-8")
        except OSError:
            source = None
    launch = prepared.problem.launch
    return Context(prepared.compiled.ptx.splitlines(), source, f"grid {list(launch.grid)}, block {list(launch.block)}")
