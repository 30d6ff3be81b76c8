"""The reference sandbox (semantics/torch/sandbox.py): what a hostile `ref.py` tries ends the capture as an
error naming it, and does not happen.

Each refusal test runs a real capture (a cold worker, seconds each). The reference catches every exception
around its attempt, to show that catching does not let it go on. The last tests drive the kernel layers
alone (no audit hook), as code that bypasses Python would meet them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from semantics.torch.capture import ReferenceError, capture_reference

MODEL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    try:
{attempt}
    except BaseException:
        pass
    return [torch.randn(4, 4)]
"""


def _reference(tmp_path: Path, attempt: str) -> Path:
    path = tmp_path / "ref" / "ref.py"
    path.parent.mkdir()
    path.write_text(MODEL.format(attempt=textwrap.indent(textwrap.dedent(attempt).strip(), " " * 8)))
    return path


def _processes_running(source: Path) -> list[int]:
    """Processes whose command line names `source`: the capture worker and all it forked carry it."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(source).encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.setblocking(False)
        yield server


def _no_connection(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return True
    return False


def test_network_connection_is_refused(tmp_path, listener):
    port = listener.getsockname()[1]
    source = _reference(tmp_path, f"""
        import socket
        socket.create_connection(("127.0.0.1", {port}), timeout=5).sendall(b"hello")
        """)
    with pytest.raises(ReferenceError, match=rf"tried to open a network connection to \('127.0.0.1', {port}\)"):
        capture_reference(source, timeout_s=60)
    assert _no_connection(listener)


def test_write_outside_its_directory_is_refused(tmp_path):
    target = tmp_path / "outside.txt"
    source = _reference(tmp_path, f"""
        with open({str(target)!r}, "w") as f:
            f.write("written by the reference")
        """)
    with pytest.raises(ReferenceError, match=f"tried to write {target}"):
        capture_reference(source, timeout_s=60)
    assert not target.exists()


def test_fork_is_refused(tmp_path):
    source = _reference(tmp_path, """
        import os, time
        if os.fork() == 0:
            time.sleep(600)
        """)
    with pytest.raises(ReferenceError, match=r"tried to fork a process \(os.fork\)"):
        capture_reference(source, timeout_s=60)
    assert _processes_running(source) == []


def test_child_forked_past_python_is_killed_with_the_capture(tmp_path):
    """A fork through ctypes raises no audit event; the child leaves the process group too. The capture
    succeeds (nothing was refused) and the PID namespace kills the child when the worker ends."""
    source = _reference(tmp_path, """
        import ctypes, time
        libc = ctypes.CDLL(None)
        if libc.fork() == 0:
            libc.setsid()
            time.sleep(600)
        """)
    graph = capture_reference(source, timeout_s=60)
    assert len(graph.outputs) == 1
    assert _processes_running(source) == []


def test_sleeping_forever_ends_at_the_timeout(tmp_path):
    source = _reference(tmp_path, """
        import time
        time.sleep(10 ** 6)
        """)
    with pytest.raises(ReferenceError, match="timed out after 8 s"):
        capture_reference(source, timeout_s=8)
    assert _processes_running(source) == []


KERNEL_LAYERS = """
import json, os, socket, sys
from pathlib import Path
from semantics.torch.sandbox import enter
warnings = enter(Path(sys.argv[1]))
outcome = {"warnings": warnings, "interfaces": [name for _, name in socket.if_nameindex()]}

def udp():  # Landlock has no rule for UDP: only the network namespace stops this one
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"hello", ("127.0.0.1", int(sys.argv[4])))
    return s

for name, attempt in [
    ("connect", lambda: socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=5)),
    ("udp", udp),
    ("write", lambda: open(sys.argv[2], "w")),
    ("write_inside", lambda: open(os.path.join(sys.argv[1], "inside.txt"), "w")),
]:
    try:
        attempt().close()
        outcome[name] = "done"
    except OSError as exc:
        outcome[name] = type(exc).__name__
print(json.dumps(outcome))
"""


def test_kernel_layers_are_active_here(tmp_path, listener):
    """No audit hook: the network namespace and Landlock alone stop the attempts, and this machine offers
    both (no warning), so the tests above show the real sandbox."""
    inside, outside = tmp_path / "sandbox", tmp_path / "outside.txt"
    inside.mkdir()
    port = listener.getsockname()[1]
    datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    datagrams.bind(("127.0.0.1", 0))
    datagrams.setblocking(False)
    args = [str(inside), str(outside), str(port), str(datagrams.getsockname()[1])]
    run = subprocess.run([sys.executable, "-c", KERNEL_LAYERS, *args],
                         capture_output=True, text=True, timeout=60, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    outcome = json.loads(run.stdout)
    assert outcome["warnings"] == []
    assert outcome["interfaces"] == ["lo"]       # a network namespace of its own
    assert outcome["connect"] != "done" and outcome["udp"] != "done"
    assert outcome["write"] == "PermissionError"
    assert outcome["write_inside"] == "done"
    assert not outside.exists() and (inside / "inside.txt").exists()
    assert _no_connection(listener)
    with pytest.raises(BlockingIOError):
        datagrams.recvfrom(64)
    datagrams.close()


def test_lark_verify_reports_the_refusal_as_an_error(tmp_path):
    """Through the job runner (what `lark verify` and the server call): exit 3, the reason naming it."""
    task = tmp_path / "task"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "relu_64x64", task)
    target = tmp_path / "outside.txt"
    reference = (task / "ref.py").read_text()
    (task / "ref.py").write_text(reference.replace("def get_inputs():\n",
                                                   f"def get_inputs():\n    open({str(target)!r}, 'w')\n"))
    root = Path(__file__).resolve().parents[1]
    run = subprocess.run([sys.executable, "-c", "from orchestrator.cli import main; main()", "verify",
                          str(task / "lark.toml"), "--json"], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert run.returncode == 3, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["verdict"] == "error"
    assert f"the reference tried to write {target}" in result["reason"]
    assert not target.exists()
