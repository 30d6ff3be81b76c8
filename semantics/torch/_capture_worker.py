"""The subprocess that runs reference code (started as `python -m semantics.torch._capture_main`).

Reference files are untrusted Python, so they only ever run here: inside the sandbox `_capture_main`
enters (sandbox.py: no network, no writes outside `--writable`, a PID namespace), under the limits
`capture.py` sets up.
The worker imports torch and warms `torch.export` up once, then forks one child per reference: each
child is isolated from the others (a reference cannot change how another is captured) yet starts in
about a tenth of a second instead of the seconds a cold export costs. A child builds the model and its
inputs on the meta device — shapes and dtypes only, no storage, so an 8 GiB input costs nothing —
exports it, decomposes it to core ATen, and sends the encoded graph (graph.py's node format) back on a
pipe; its own stdout/stderr go to /dev/null so reference prints cannot corrupt the result. The worker
prints one JSON list on stdout: per source ``{"graph": {...}}`` or ``{"error": "..."}``.

With `--serve` the worker stays (capture.WarmCapture: a server keeps one so that a new reference costs the
fork, not torch's start): it answers ``{"ready": true}`` once warm, then reads one request per line on
stdin (``{"source": PATH, "timeout": S}``) and answers each with one entry as above, every answer
length-prefixed like a child's. It ends when stdin closes. After each reference whatever it left is killed
and its files removed, so one reference cannot reach the next.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

import torch
from torch.export.graph_signature import InputKind, OutputKind
from torch.overrides import TorchFunctionMode

from semantics.torch.graph import canonical_json, frame_complete, framed, round_float, unframed
from semantics.torch.sandbox import refuse_outside

_MAX_MESSAGE = 4000
_WARM_UP_CPU_S = 60
_MAX_FILE_BYTES = 64 << 20
_SCALARS = {"bool": bool, "int": int, "float": float}
_SCALAR_DTYPES = {"bool": torch.bool, "int": torch.int64, "float": torch.float32}


class CaptureFailure(Exception):
    """A reference that cannot be captured; the message is reported to the user as is."""


class _ForceMeta(TorchFunctionMode):
    """Keeps every tensor on the meta device: explicit `device=` arguments, `.cuda()` and `.to(device)`
    (KernelBench references often ask for CUDA) are redirected instead of failing or allocating."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.Tensor.cuda, torch.Tensor.cpu):
            return args[0]
        if func is torch.Tensor.to:
            kwargs.pop("device", None)
            args = tuple(a for a in args if not isinstance(a, str | torch.device))
            if len(args) == 1 and not kwargs:
                return args[0]
        elif "device" in kwargs:
            kwargs["device"] = "meta"
        return func(*args, **kwargs)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _spec(value: Any) -> dict[str, Any]:
    return {"shape": [int(d) for d in value.shape], "dtype": _dtype_name(value.dtype)}


def _result(value: Any, where: str) -> dict[str, Any] | None:
    """The spec of an op's result; None for ops that return nothing (export's metadata assertions)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return _spec(value)
    raise CaptureFailure(f"{where}: cannot record a result of type {type(value).__name__}")


def _load(source: Path) -> Any:
    try:
        sys.path.insert(0, str(Path(source).resolve().parent))   # ref.py may import a module beside it
        spec = importlib.util.spec_from_file_location("lark_reference", source)
        module = importlib.util.module_from_spec(spec)
        sys.modules["lark_reference"] = module
        with torch.device("meta"), _ForceMeta():
            spec.loader.exec_module(module)
    except Exception as exc:
        raise CaptureFailure(f"reference failed to load: {type(exc).__name__}: {exc}") from exc
    if not isinstance(getattr(module, "Model", None), type):
        raise CaptureFailure("reference defines no `Model` class")
    if not callable(getattr(module, "get_inputs", None)):
        raise CaptureFailure("reference defines no `get_inputs()` function")
    return module


def _build(module: Any) -> tuple[torch.nn.Module, list[Any], list[dict[str, Any]]]:
    """The model and export arguments on meta, and the spec of each user input. A Python scalar becomes a
    0-d tensor so that export keeps it symbolic instead of baking its value into the graph."""
    with torch.device("meta"), _ForceMeta():
        try:
            init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
            model = module.Model(*init)
        except Exception as exc:
            raise CaptureFailure(f"Model(*get_init_inputs()) failed: {type(exc).__name__}: {exc}") from exc
        try:
            inputs = list(module.get_inputs())
        except Exception as exc:
            raise CaptureFailure(f"get_inputs() failed: {type(exc).__name__}: {exc}") from exc
        args, specs = [], []
        for i, value in enumerate(inputs):
            if isinstance(value, torch.Tensor):
                args.append(torch.empty(value.shape, dtype=value.dtype, device="meta"))
                specs.append(_spec(value))
            elif isinstance(value, bool | int | float):
                kind = next(k for k in ("bool", "int", "float") if isinstance(value, _SCALARS[k]))
                args.append(torch.empty((), dtype=_SCALAR_DTYPES[kind], device="meta"))
                specs.append({"scalar": kind})
            else:
                raise CaptureFailure(f"get_inputs()[{i}] is a {type(value).__name__}, not a tensor or scalar")
    if not isinstance(model, torch.nn.Module):
        raise CaptureFailure("Model(...) is not a torch.nn.Module")
    return model, args, specs


def _export(model: torch.nn.Module, args: list[Any], scalars: bool) -> torch.export.ExportedProgram:
    with torch.device("meta"), _ForceMeta():
        try:
            program = torch.export.export(model, tuple(args))
        except Exception as exc:
            hint = (" (note: Python scalars from get_inputs() reach forward() as 0-d tensors, so that they "
                    "stay symbolic)") if scalars else ""
            raise CaptureFailure(f"torch.export failed: {type(exc).__name__}: {exc}{hint}") from exc
        try:
            return program.run_decompositions()
        except Exception as exc:
            raise CaptureFailure(f"decomposition to core ATen failed: {type(exc).__name__}: {exc}") from exc


class _Encoder:
    """Turns one exported program into graph.py's JSON-able form."""

    def __init__(self, program: torch.export.ExportedProgram, input_specs: list[dict[str, Any]]):
        self.program = program
        self.input_specs = input_specs
        self.nodes = {n.name: n for n in program.graph.nodes}
        self.user_outputs = self._user_outputs()
        self.placeholders: dict[str, dict[str, Any]] = {}
        user = 0
        for spec in program.graph_signature.input_specs:
            name = spec.arg.name
            if spec.kind is InputKind.USER_INPUT:
                self.placeholders[name] = {"input": user}
                user += 1
            elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
                self.placeholders[name] = {"param": spec.target}
            elif spec.kind is InputKind.CONSTANT_TENSOR:
                self.placeholders[name] = {"constant": spec.target}
            else:
                raise CaptureFailure(f"unsupported exported input kind {spec.kind.name} ({name})")

    def encode(self) -> dict[str, Any]:
        nodes, params = [], {}
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                entry = {"op": "placeholder", "name": node.name, **self.placeholders[node.name],
                         "out": _spec(node.meta["val"])}
                if "param" in entry:
                    params[entry["param"]] = entry["out"]
            elif node.op == "call_function":
                entry = self._call(node)
            elif node.op == "output":
                entry = {"op": "output", "name": node.name, "args": [{"node": n} for n in self.user_outputs]}
            else:
                raise CaptureFailure(f"unsupported graph node {node.op} ({node.name})")
            nodes.append(entry)
        outputs = [_spec(self.nodes[n].meta["val"]) for n in self.user_outputs]
        return {"user_inputs": self.input_specs, "params": params, "outputs": outputs, "nodes": nodes}

    def _user_outputs(self) -> list[str]:
        """The model's results in order; buffer mutations (BatchNorm running statistics) are not results."""
        names = []
        for spec in self.program.graph_signature.output_specs:
            if spec.kind is OutputKind.USER_OUTPUT:
                node = self.nodes.get(getattr(spec.arg, "name", None))
                if node is None or not isinstance(node.meta.get("val"), torch.Tensor):
                    raise CaptureFailure(f"model output {len(names)} is not a tensor")
                names.append(node.name)
        return names

    def _call(self, node: torch.fx.Node) -> dict[str, Any]:
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            name = str(target)
            bound = _bind(target, node.args, node.kwargs)
        else:
            name = getattr(target, "__name__", repr(target))
            bound = {f"arg{i}": a for i, a in enumerate(node.args)} | dict(node.kwargs)
        double = _computes_in_double(node)
        args = {k: _encode(v, double, name) for k, v in bound.items() if k != "device"}
        val = node.meta.get("val")
        out = [_result(v, name) for v in val] if isinstance(val, tuple | list) else _result(val, name)
        return {"op": "call", "name": node.name, "target": name, "args": args, "out": out}


def _bind(target: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """Every schema argument by name, defaults filled in, so the semantics never guesses a default."""
    bound: dict[str, Any] = {}
    for i, arg in enumerate(target._schema.arguments):
        if i < len(args) and not arg.kwarg_only:
            bound[arg.name] = args[i]
        elif arg.name in kwargs:
            bound[arg.name] = kwargs[arg.name]
        elif arg.has_default_value():
            bound[arg.name] = arg.default_value
        else:
            raise CaptureFailure(f"{target}: argument {arg.name} missing")
    return bound


def _computes_in_double(node: torch.fx.Node) -> bool:
    vals = [node.meta.get("val")] + [a.meta.get("val") for a in node.all_input_nodes]
    flat = [v for val in vals for v in (val if isinstance(val, tuple | list) else [val])]
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in flat)


def _encode(value: Any, double: bool, where: str) -> Any:
    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": round_float(value, double).hex()}
    if isinstance(value, list | tuple):
        return [_encode(v, double, where) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype": _dtype_name(value)}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    raise CaptureFailure(f"{where}: cannot record an argument of type {type(value).__name__}")


def capture_one(source: Path) -> dict[str, Any]:
    """The encoded graph of one reference file (run in a child process)."""
    module = _load(source)
    model, args, specs = _build(module)
    program = _export(model, args, scalars=any("scalar" in s for s in specs))
    return _Encoder(program, specs).encode()


def _child(source: Path, write_fd: int, timeout_s: float, writable: Path) -> None:
    """Forked child: sandboxed working directory, own CPU limit, result on the pipe; never returns. From the
    moment the reference loads, a refused action (sandbox.refuse_outside) ends the child with its error."""
    try:
        os.setpgid(0, 0)     # its own group, so that what it starts is killed with it (_clear_after)
        cpu = max(1, int(timeout_s) + 1)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.chdir(tempfile.mkdtemp(prefix="ref-"))

        def refused(message: str) -> NoReturn:
            _send(write_fd, {"error": message[:_MAX_MESSAGE]})
            os._exit(0)

        refuse_outside(writable, refused)
        try:
            result: dict[str, Any] = {"graph": capture_one(source)}
        except CaptureFailure as exc:
            result = {"error": str(exc)[:_MAX_MESSAGE]}
        except BaseException as exc:  # reference code may raise anything, SystemExit included
            result = {"error": f"capture failed: {type(exc).__name__}: {exc}"[:_MAX_MESSAGE]}
        _send(write_fd, result)
    finally:
        os._exit(0)


def _send(write_fd: int, result: dict[str, Any]) -> None:
    """The result on the pipe, length first, by plain writes (an `open` would reach the audit hook)."""
    _frame(write_fd, result)
    os.close(write_fd)


def _frame(fd: int, result: dict[str, Any]) -> None:
    data = memoryview(framed(result))
    while data:
        data = data[os.write(fd, data):]


def _run_child(source: Path, timeout_s: float, writable: Path, client: int | None = None) -> dict[str, Any]:
    """One reference captured in a forked child. A serving worker passes its stdin as `client`: a client
    that goes away (stdin readable while it waits for an answer: end of file) ends the child and the worker."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(source, write_fd, timeout_s, writable)
    os.close(write_fd)
    data, deadline, timed_out = b"", time.monotonic() + timeout_s, False
    try:
        while not frame_complete(data):
            left = deadline - time.monotonic()
            ready = select.select([read_fd] + ([client] if client is not None else []), [], [], max(left, 0))[0]
            if client in ready:
                os.kill(pid, signal.SIGKILL)
                _clear_after(pid, writable)
                os._exit(0)
            if left <= 0 or not ready:
                timed_out = True
                os.kill(pid, signal.SIGKILL)
                break
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    _clear_after(pid, writable)
    if timed_out:
        return {"error": f"reference capture timed out after {round(timeout_s, 1):g} s", "timed_out": True}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        why = "exceeded its CPU time limit" if sig == signal.SIGXCPU else f"died with signal {sig}"
        return {"error": f"reference capture process {why}"}
    if not frame_complete(data):
        return {"error": "reference capture process exited without a result"}
    return unframed(data)


def _clear_after(pid: int, writable: Path) -> None:
    """Ends whatever a reference started and removes the files it wrote, before the next one runs. As the
    first process of its PID namespace the worker reaches every process in it (kill(-1) spares itself);
    without one, the child's process group."""
    try:
        os.kill(-1, signal.SIGKILL) if os.getpid() == 1 else os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:            # every one of them was killed: wait until each is gone (orphans are ours to reap)
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    for entry in writable.iterdir():
        shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)


def _limit_self(timeout_s: float, count: int | None) -> None:
    """Limits inherited by every child: no core dumps, no big files, CPU time for the whole batch (each
    child then lowers its own CPU limit; a serving worker, `count` None, has none of its own: it only forks
    and waits). No address-space limit: torch reserves a lot of it."""
    if count is not None:
        cpu = int(_WARM_UP_CPU_S + timeout_s * count) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (_MAX_FILE_BYTES, _MAX_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _warm_up() -> None:
    """One tiny export so the children inherit an initialised exporter (a cold export costs seconds)."""
    with torch.device("meta"):
        torch.export.export(torch.nn.ReLU(), (torch.empty(2),)).run_decompositions()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--writable", type=Path, required=True, help="the one directory it may write in")
    parser.add_argument("--serve", action="store_true", help="answer requests on stdin until it closes")
    parser.add_argument("sources", nargs="*", type=Path)
    ns = parser.parse_args(argv)
    _limit_self(ns.timeout, None if ns.serve else len(ns.sources))
    try:
        _warm_up()
    except Exception:
        traceback.print_exc()
    if ns.serve:
        _serve(ns.writable)
        return
    results = [_run_child(source, ns.timeout, ns.writable) for source in ns.sources]
    sys.stdout.write(canonical_json(results))
    sys.stdout.flush()


def _serve(writable: Path) -> None:
    """Serve mode: ready, then one answer per request line, until stdin closes (the client is gone)."""
    out = sys.stdout.fileno()
    _frame(out, {"ready": True})
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            source, timeout_s = Path(request["source"]), float(request["timeout"])
        except (ValueError, KeyError, TypeError) as exc:
            _frame(out, {"error": f"malformed capture request: {exc!r}"})
            continue
        _frame(out, _run_child(source, timeout_s, writable, sys.stdin.fileno()))

