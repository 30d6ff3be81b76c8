"""The scripted agent's answers for the examples/llm_* tasks (tests/test_llm.py, bench/llm_provers.py): the
writer of output element e that the heuristic inverse prover cannot find, one answer per example."""

from __future__ import annotations

from tests.llm_server import answer

UNUSED = {"ctaid_y": "0", "ctaid_z": "0", "tid_y": "0", "tid_z": "0"}
EXAMPLE_ANSWERS = {
    "llm_mirrored_store": answer("thread t of block b stores 256·b + 255 - t", ctaid_x="e // 256",
                                 tid_x="255 - e % 256", **UNUSED),
    "llm_rotated_store": answer("thread t stores column (t + 17) % 256: t = (column + 239) % 256",
                                ctaid_x="e // 256", tid_x="(e % 256 + 239) % 256", **UNUSED),
    "llm_flipped_rows": answer("block b stores row 63 - b", ctaid_x="63 - e // 64", tid_x="e % 64", **UNUSED),
}
