"""The numbered stages of `lark verify`, from a manifest to a `Problem` the trusted core can decide.

1 intake (manifest) -> 2 frontend (nvcc / triton -> PTX) -> 3 parse PTX -> 4 capture the reference
-> 5 bind buffers, scalars and parameters -> 6 verify (semantics.verdict). Each stage raises its own
error type; `IntakeError` and `ReferenceError` are bad input (exit 3), `Unsupported` becomes unknown.
A safety-only task (no [reference]) skips stage 4: its buffers and scalars come from the manifest alone.
Stage 4 starts before stage 2, on a thread: a capture not cached is a subprocess importing torch (seconds),
a compile is nvcc (about half a second), and neither needs the other, so a cold task waits for the longer
of the two rather than their sum (issue 19, item 9). `lark verify` starts both even earlier, before the
verifier's imports (`prestart`); what it started is taken here. Errors still surface in stage order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import z3

from orchestrator.bindings import check_bindings
from orchestrator.capture_cache import capture_cached
from orchestrator.deadline import DeadlinePassed
from orchestrator.frontends import NVCC_TIMEOUT_S, CompiledKernel, FrontendTimedOut, compile_kernel
from orchestrator.manifest import NULL, IntakeError, Task, load_task
from orchestrator.prestart import CAPTURE, CAPTURE_MIN_S, COMPILE, in_background, take
from semantics.constants import reference_constants
from semantics.errors import Unsupported
from semantics.problem import Problem
from semantics.ptx.ast import Kernel
from semantics.ptx.machine import DTYPE_BYTES, Buffer, Launch, ScalarParam, null_allocation
from semantics.ptx.parser import PtxSyntaxError, parse_ptx
from semantics.ptx.state import Precision
from semantics.torch.capture import CaptureTimedOut, RefGraph
from semantics.torch.graph import ScalarSpec, TensorSpec
from semantics.torch.ops import RefEnv, reference_outputs
from semantics.torch.ops import Unsupported as TorchUnsupported


@dataclass
class Prepared:
    task: Task
    compiled: CompiledKernel
    kernel: Kernel
    graph: RefGraph | None   # None for a safety-only task
    problem: Problem


def _tensor_specs(task: Task, graph: RefGraph) -> tuple[dict[str, TensorSpec], dict[str, tuple[str, int]]]:
    """Shape/dtype of every named tensor, and how the reference sees each name ('input', i) / ('param', n)."""
    ref = task.reference
    if len(ref.inputs) != len(graph.user_inputs):
        raise IntakeError("reference.inputs", f"get_inputs() returns {len(graph.user_inputs)} values, the manifest "
                                              f"names {len(ref.inputs)}")
    if len(ref.outputs) != len(graph.outputs):
        raise IntakeError("reference.outputs", f"the model returns {len(graph.outputs)} outputs, the manifest names "
                                               f"{len(ref.outputs)}")
    specs: dict[str, TensorSpec] = {}
    origin: dict[str, tuple[str, object]] = {}
    for i, (name, spec) in enumerate(zip(ref.inputs, graph.user_inputs, strict=True)):
        origin[name] = ("input", i)
        if isinstance(spec, TensorSpec):
            specs[name] = spec
    for name, spec in zip(ref.outputs, graph.outputs, strict=True):
        specs[name] = spec
        origin[name] = ("output", None)
    for name, state_name in ref.parameters.items():
        if state_name not in graph.params:
            raise IntakeError(f"reference.parameters.{name}", f"the model has no parameter or buffer "
                                                              f"{state_name!r} (it has {sorted(graph.params)})")
        specs[name] = graph.params[state_name]
        origin[name] = ("param", state_name)
    for name, decl in task.tensors.items():
        if name not in specs:
            specs[name] = TensorSpec(tuple(decl.shape), decl.dtype)
            origin[name] = ("scratch", None)
    return specs, origin


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _buffers(task: Task, specs: dict[str, TensorSpec], origin: dict) -> dict[str, Buffer]:
    roles = {"input": "input", "param": "input", "output": "output", "scratch": "scratch"}
    buffers = {}
    for name, spec in specs.items():
        if spec.dtype not in DTYPE_BYTES:
            raise Unsupported(f"tensor {name} of dtype {spec.dtype}")
        decl = task.tensors.get(name)
        init = decl.init if decl and decl.init != "any" else None
        role = roles[origin[name][0]]
        values = BOOL_BYTES if spec.dtype == "bool" and role == "input" else None
        buffers[name] = Buffer(name, spec.dtype, _numel(spec.shape), DTYPE_BYTES[spec.dtype], role, init,
                               values=values)
    return _with_ranges(task, buffers)


BOOL_BYTES = (0, 1)     # what every byte of a torch bool input holds: a precondition the result lists


SIGNED_INTEGERS = frozenset({"int8", "int16", "int32", "int64"})


def _with_ranges(task: Task, buffers: dict[str, Buffer]) -> dict[str, Buffer]:
    """Each `[tensors] NAME = { range = [lo, hi] }` on the buffer it constrains: only an integer input's
    elements have a value range, and it must fit the dtype (`semantics/preconditions.py`)."""
    for name, decl in task.tensors.items():
        if decl.values is None or name not in buffers:
            continue
        buffer, (lo, hi) = buffers[name], decl.values
        field_name = f"tensors.{name}.range"
        if buffer.dtype not in SIGNED_INTEGERS or buffer.role != "input":
            raise IntakeError(field_name, f"a value range is a precondition on a signed integer input (int8 to "
                                          f"int64); {name} is a {buffer.dtype} {buffer.role} buffer")
        half = 1 << (buffer.elem_bytes * 8 - 1)
        if not -half <= lo <= hi < half:
            raise IntakeError(field_name, f"[{lo}, {hi}] does not fit {buffer.dtype} ([{-half}, {half - 1}])")
        buffers[name] = replace(buffer, values=(lo, hi))
    return buffers


def _scalar_symbol(name: str, spec: ScalarSpec) -> z3.ExprRef:
    return z3.Real(f"scalar.{name}") if spec.kind == "float" else z3.BitVec(f"scalar.{name}", 64)


def prepare(path: Path, allow_narrowing: bool = False, capture_s: float = 180.0, deadline: float | None = None,
            on_stage: Callable[[str], None] | None = None, exact_constants: bool = False) -> Prepared:
    """Stages 1-5 for the manifest at `path`. `allow_narrowing` lets float conversions narrower than the
    reference's dtype stand as the identity (axiom float.narrowing, listed per use). `capture_s` bounds the
    reference's capture in wall-clock time; a job's `deadline` (time.monotonic()) bounds the compile and
    the capture by what is left of its timeout. `on_stage` hears the stages that can take seconds.
    `exact_constants` forbids identifying a kernel literal with a reference constant 2 ulps away (axiom
    float.constant)."""
    note = on_stage or (lambda _stage: None)
    task = load_task(path)
    capture = None if task.safety_only else take(CAPTURE, path) or in_background(
        lambda: capture_cached(task.reference.source, max(_left(deadline, capture_s), CAPTURE_MIN_S)))
    note("compile")
    compiling = take(COMPILE, path)
    with _budget_spent_on_time_out(deadline):
        compiled = compiling.result() if compiling else compile_kernel(task.kernel, _left(deadline, NVCC_TIMEOUT_S))
    try:
        module = parse_ptx(compiled.ptx)
    except PtxSyntaxError as exc:
        raise IntakeError("kernel.source", f"the PTX does not parse: {exc}") from exc
    kernel = module.kernels[compiled.entry]
    kernel.vars = kernel.vars + [v for v in module.vars if v.space == ".shared"]  # Triton's module-scope smem
    if task.safety_only:
        return Prepared(task, compiled, kernel, None, _safety_problem(task, compiled, kernel, module.files))
    note("capture the reference")
    with _budget_spent_on_time_out(deadline):
        graph = capture.result()
    specs, origin = _tensor_specs(task, graph)
    buffers = _buffers(task, specs, origin)
    scalars = {name: _scalar_symbol(name, graph.user_inputs[origin[name][1]]) for name in task.reference.inputs
               if isinstance(graph.user_inputs[origin[name][1]], ScalarSpec)}

    n_user = compiled.user_params if compiled.user_params is not None else len(kernel.params)
    user_params = kernel.params[:n_user]
    bound_kinds = {name: f"tensor:{b.dtype}" for name, b in buffers.items()}
    bound_kinds.update({name: f"scalar:{'float' if z3.is_real(s) else 'int'}" for name, s in scalars.items()})
    check_bindings(task, [(p.name, p.type, p.is_ptr) for p in user_params], bound_kinds, compiled.param_types)

    args: list[object] = [buffers.get(a, scalars.get(a)) if isinstance(a, str) else a for a in task.launch.args]
    launch = _launch(task, compiled, kernel.params[n_user:], args, buffers)
    references, problem_text = _references(graph, task, buffers, scalars, origin)
    problem = Problem(kernel, launch, buffers, args, references, problem_text,
                      shared_symbols={str(s) for s in scalars.values()} | {"ln2"}, source_files=module.files,
                      language=task.kernel.language,
                      precision=Precision(_reference_float_bits(buffers), allow_narrowing),
                      constants=reference_constants(graph), exact_constants=exact_constants)
    return Prepared(task, compiled, kernel, graph, problem)


@contextmanager
def _budget_spent_on_time_out(deadline: float | None) -> Iterator[None]:
    """A compile or capture that timed out once the job's deadline had passed ran out of the job's budget
    (unknown), not of its own limit: a reference or kernel that runs too long is bad input (error)."""
    try:
        yield
    except (FrontendTimedOut, CaptureTimedOut) as exc:
        if deadline is not None and time.monotonic() >= deadline:
            raise DeadlinePassed from exc
        raise


def _left(deadline: float | None, most: float) -> float:
    """Seconds left before `deadline`, at most `most` (all of `most` without a deadline)."""
    return most if deadline is None else min(most, deadline - time.monotonic())


def _safety_buffers(task: Task) -> dict[str, Buffer]:
    """The declared buffers of a safety-only task. Arbitrary contents make a buffer an input (reads see its
    initial contents; `verdict.verify` rebinds one the kernel writes); a declared initial value, scratch."""
    buffers = {}
    for name, decl in task.tensors.items():
        if decl.dtype not in DTYPE_BYTES:
            raise Unsupported(f"tensor {name} of dtype {decl.dtype}")
        init = decl.init if decl.init != "any" else None
        numel = 0 if decl.unbounded else _numel(decl.shape)
        buffers[name] = Buffer(name, decl.dtype, numel, DTYPE_BYTES[decl.dtype], "scratch" if init else "input",
                               init, decl.unbounded)
    return _with_ranges(task, buffers)


def _scalar_params(task: Task, user_params: list) -> dict[str, ScalarParam]:
    """Each `[scalars]` entry as a symbolic parameter as wide as the kernel parameter it is passed to."""
    scalars = {}
    for i, arg in enumerate(task.launch.args):
        if not isinstance(arg, str) or arg not in task.scalars or i >= len(user_params):
            continue
        bits = int("".join(ch for ch in user_params[i].type if ch.isdigit()) or 0)
        span = task.scalars[arg]
        low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if span.lo < 0 else (0, 2**bits - 1)
        if user_params[i].is_ptr or not low <= span.lo <= span.hi <= high:
            raise IntakeError(f"scalars.{arg}.range", f"[{span.lo}, {span.hi}] does not fit parameter {i} "
                                                      f"({user_params[i].name}, {user_params[i].type})")
        scalars[arg] = ScalarParam(arg, bits, span.lo, span.hi)
    return scalars


def _safety_problem(task: Task, compiled: CompiledKernel, kernel: Kernel, files: dict) -> Problem:
    """Stage 5 without a reference: bind the declared buffers and symbolic scalars."""
    buffers = _safety_buffers(task)
    n_user = compiled.user_params if compiled.user_params is not None else len(kernel.params)
    user_params = kernel.params[:n_user]
    scalars = _scalar_params(task, user_params)
    bound_kinds = {name: f"tensor:{b.dtype}" for name, b in buffers.items()}
    bound_kinds.update({name: "scalar:int" for name in scalars})
    check_bindings(task, [(p.name, p.type, p.is_ptr) for p in user_params], bound_kinds, compiled.param_types)
    args: list[object] = [buffers.get(a, scalars[a].symbol if a in scalars else None) if isinstance(a, str) else a
                          for a in task.launch.args]
    launch = _launch(task, compiled, kernel.params[n_user:], args, buffers, tuple(scalars.values()))
    return Problem(kernel, launch, buffers, args, None, None,
                   shared_symbols={str(s.symbol) for s in scalars.values()}, source_files=files,
                   language=task.kernel.language, precision=Precision(_reference_float_bits(buffers)),
                   safety_only=True)


def _bind_nulls(task: Task, args: list[object], buffers: dict[str, Buffer]) -> None:
    """Each `"null"` argument as the null pointer: a pointer into an allocation of no bytes (`null_allocation`)."""
    for i, arg in enumerate(task.launch.args):
        if arg == NULL:
            null = null_allocation(i)
            args[i] = buffers[null.name] = null


def _launch(task: Task, compiled: CompiledKernel, extras: list, args: list[object], buffers: dict[str, Buffer],
            scalars: tuple = ()) -> Launch:
    """Finish the arguments (null pointers bound; Triton's own scratch pointers `extras` as opaque buffers,
    never bound to user data) and make the launch. Triton's launcher always passes the compiled kernel's own
    shared-memory size; nvcc kernels take the manifest's."""
    _bind_nulls(task, args, buffers)
    for extra in extras:
        buffers[extra.name] = Buffer(extra.name, "uint8", 0, 1, "opaque")
        args.append(buffers[extra.name])
    block = task.launch.block or compiled.block
    shared_bytes = task.launch.dynamic_shared_bytes if compiled.shared_bytes is None else compiled.shared_bytes
    return Launch(task.launch.grid, block, shared_bytes, scalars)


def _reference_float_bits(buffers: dict[str, Buffer]) -> int:
    """The float width the reference computes in: its widest float output (else its widest float tensor)."""
    floats = [b for b in buffers.values() if b.is_float]
    outputs = [b for b in floats if b.role == "output"] or floats
    return max((8 * b.elem_bytes for b in outputs), default=32)


def _references(graph: RefGraph, task: Task, buffers: dict[str, Buffer], scalars: dict, origin: dict):
    tensors = {}
    for name, (kind, key) in origin.items():
        if kind == "input" and name in buffers:
            tensors[f"input:{key}"] = buffers[name].contents()
        elif kind == "param":
            tensors[f"param:{key}"] = buffers[name].contents()
    ranges = {b.contents().name(): b.values for b in buffers.values() if b.values}
    env = RefEnv(tensors=tensors, scalars={origin[n][1]: s for n, s in scalars.items()}, ranges=ranges)
    try:
        outputs = reference_outputs(graph, env)
    except TorchUnsupported as exc:
        return None, str(exc)
    return dict(zip(task.reference.outputs, outputs, strict=True)), None
