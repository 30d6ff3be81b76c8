"""A warm capture worker (semantics.torch.capture.WarmCapture, issue 19 item 9): one sandboxed worker that a
long-lived process (a server's worker) keeps, so that a reference not captured before costs a fork instead
of torch's start. It must give the graphs a one-shot capture gives, and one reference must not reach the
next: its timeout, the processes it leaves and the files it writes end with it. Timings are printed by
bench/cold_start.py, never asserted.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from semantics.torch.capture import CaptureTimedOut, WarmCapture, capture_reference

REPO = Path(__file__).resolve().parents[1]

MODEL = """
import os
import torch
import torch.nn as nn

{head}

class Model(nn.Module):
    def forward(self, x):
        return {body}

def get_inputs():
{inputs}
    return [torch.randn(4, 4)]
"""


def _reference(tmp_path: Path, name: str, body: str = "torch.relu(x)", head: str = "", inputs: str = "") -> Path:
    path = tmp_path / name / "ref.py"
    path.parent.mkdir()
    path.write_text(MODEL.format(head=textwrap.dedent(head), body=body,
                                 inputs=textwrap.indent(textwrap.dedent(inputs).strip() or "pass", " " * 4)))
    return path


def _ops(graph) -> str:
    return str(graph.nodes)


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, PID namespace) of every process this user can see."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                found[int(entry.name)] = (parent, str((entry / "ns" / "pid").readlink()))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _sandboxed(worker: int) -> set[int]:
    """The processes of the worker's PID namespace (its first process is the started process's child):
    a process a reference forks, even into a session of its own, is one of them."""
    table = _processes()
    namespaces = {ns for pid, (parent, ns) in table.items() if parent == worker}
    return {pid for pid, (_, ns) in table.items() if ns in namespaces}


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmCapture]:
    worker = WarmCapture()
    worker.start()
    yield worker
    worker.close()


def test_one_warm_worker_gives_the_graphs_a_one_shot_capture_gives(warm: WarmCapture) -> None:
    sources = [REPO / "examples" / name / "ref.py" for name in ("relu_64x64", "lib_online_softmax_rows")]
    pid = None
    for source in sources:
        graph = warm.capture(source, 120)
        assert graph.to_json() == capture_reference(source, 120).to_json()
        assert pid in (None, warm.pid)
        pid = warm.pid


def test_a_reference_past_its_timeout_ends_alone(warm: WarmCapture, tmp_path: Path) -> None:
    sleepy = _reference(tmp_path, "sleepy", inputs="import time\ntime.sleep(10 ** 6)")
    warm.capture(REPO / "examples" / "relu_64x64" / "ref.py", 120)      # warm before the clock starts
    pid = warm.pid
    outcome = warm.capture(sleepy, 3)
    assert isinstance(outcome, CaptureTimedOut) and "timed out after 3 s" in str(outcome)
    assert warm.pid == pid                                              # the child ended, not the worker
    assert "relu" in _ops(warm.capture(REPO / "examples" / "relu_64x64" / "ref.py", 120))


def test_what_a_reference_starts_or_writes_is_gone_before_the_next(warm: WarmCapture, tmp_path: Path) -> None:
    """The first reference forks past Python (no audit event) into a new session and leaves a file in its
    HOME; the next one's graph says whether it saw the file (x + 1) or not (x * 2)."""
    leaves = _reference(tmp_path, "leaves", inputs="""
        import ctypes, time
        open(os.path.join(os.environ["HOME"], "left_behind"), "w").close()
        libc = ctypes.CDLL(None)
        if libc.fork() == 0:
            libc.setsid()
            time.sleep(600)
        """)
    looks = _reference(tmp_path, "looks", head='SEEN = os.path.exists(os.path.join(os.environ["HOME"], "left_behind"))',
                       body="x + 1 if SEEN else x * 2")
    warm.capture(REPO / "examples" / "relu_64x64" / "ref.py", 120)
    before = _sandboxed(warm.pid)
    assert len(before) == 1                                             # the serving worker alone
    assert not isinstance(warm.capture(leaves, 60), Exception)
    assert _sandboxed(warm.pid) == before                               # the forked process is gone
    ops = _ops(warm.capture(looks, 60))
    assert "mul" in ops and "add" not in ops                            # and so is the file
