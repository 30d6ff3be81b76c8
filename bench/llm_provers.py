"""LLM provers on the examples/llm_* tasks against the scripted loopback server (tests/llm_server.py):
goals closed per LLM call and tokens per closed goal, cold (an empty proposal store) and warm (the
learning loop answering). Prints figures; asserts nothing.

    PYTHONPATH=$PWD python bench/llm_provers.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lean_pool.cache import DiskLemmaStore  # noqa: E402
from orchestrator.job import GOAL, run_verify  # noqa: E402
from orchestrator.llm.chat import LLMConfig  # noqa: E402
from orchestrator.llm.plug import LLMProvers  # noqa: E402
from tests.llm_answers import EXAMPLE_ANSWERS  # noqa: E402
from tests.llm_server import Scripted, ScriptedServer  # noqa: E402


def run(name: str, store: DiskLemmaStore) -> tuple[str, int, int, int]:
    """(verdict, goals closed by the agent or the learned store, calls, tokens) of one example."""
    answer = Scripted(EXAMPLE_ANSWERS[name])
    closed: list[str] = []

    def heard(event) -> None:
        if event.kind == GOAL and event.data["proved"] and event.data["strategy"] in ("llm", "learned"):
            closed.append(event.data["key"])

    with ScriptedServer(lambda request: answer) as server:
        llm = LLMProvers(LLMConfig(server.base_url, "bench", "scripted"), store=store)
        result = run_verify(REPO / "examples" / name / "lark.toml", 600, events=heard, llm=llm)
    return result.verdict, len(closed), result.stats["llm_calls"], result.stats["llm_tokens"]


def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        store = DiskLemmaStore(Path(root) / "learned")
        for phase in ("cold", "warm"):
            totals = [0, 0, 0]
            print(f"{phase}:")
            for name in sorted(EXAMPLE_ANSWERS):
                verdict, goals, calls, tokens = run(name, store)
                totals = [totals[0] + goals, totals[1] + calls, totals[2] + tokens]
                print(f"  {name:22} {verdict:9} goals closed {goals}  llm calls {calls}  tokens {tokens}")
            goals, calls, tokens = totals
            per_call = f"{goals / calls:.2f}" if calls else "n/a (no call)"
            per_goal = f"{tokens / goals:.0f}" if goals else "n/a"
            print(f"  goals closed per LLM call: {per_call}; tokens per closed goal: {per_goal}")


if __name__ == "__main__":
    main()
