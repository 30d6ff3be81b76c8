"""Intake of a `lark.toml` task manifest (DESIGN §2.1): parse, validate, and bind names.

Everything a user can get wrong in a manifest is reported here, before any compiler or solver runs, as an
`IntakeError` that names the offending field (`launch.grid`, `launch.args[2]`, ...) in plain words. The
pydantic models below only check the *shape* of the TOML; the rules that relate fields to each other
(CUDA launch limits, name binding, Triton-only keys) are plain functions after it, so each rule has one
message written for people. Checks that need the compiled kernel live in `orchestrator.bindings`.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Language = Literal["cuda", "triton", "ptx"]
Dim3 = tuple[int, int, int]

LANGUAGE_BY_SUFFIX: dict[str, Language] = {".cu": "cuda", ".py": "triton", ".ptx": "ptx"}
ARCH_PATTERN = r"^sm_\d{2,3}a?$"
TORCH_DTYPES = (
    "float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
)
TENSOR_INITS = ("zeros", "ones", "any")
WARPS_PER_BLOCK = (1, 2, 4, 8, 16, 32)
NULL = "null"   # in launch.args: the null pointer for a pointer parameter (DESIGN §2.1's extension)


class IntakeError(Exception):
    """A manifest (or kernel) the user must fix; the CLI maps it to exit status 3.

    `field` is the dotted path of the offending manifest entry, so tools can point at it; the message
    always starts with that path.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.problem = message
        super().__init__(f"{field}: {message}")


# ---------------------------------------------------------------------------------------------------------
# Public result types
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSpec:
    """What to compile: the kernel source and the options its frontend needs."""

    source: Path
    entry: str
    arch: str = "sm_90"
    language: Language | None = None  # derived from the source suffix when not given
    signature: dict[str, str] = field(default_factory=dict)  # Triton only: parameter -> Triton type
    constexprs: dict[str, int | float | bool] = field(default_factory=dict)  # Triton only
    num_warps: int = 4  # Triton only
    num_stages: int | None = None  # Triton only: software pipelining depth (None: Triton's default)

    def __post_init__(self) -> None:
        if self.language is None:
            object.__setattr__(self, "language", language_of(Path(self.source)))


@dataclass(frozen=True)
class LaunchSpec:
    """How the kernel is launched: dimensions padded to three, args in kernel-parameter order."""

    grid: Dim3
    block: Dim3 | None
    dynamic_shared_bytes: int = 0
    args: tuple[str | int | float, ...] = ()


@dataclass(frozen=True)
class ReferenceSpec:
    """The PyTorch reference: which file, and how its inputs/outputs/parameters are named."""

    source: Path
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    parameters: dict[str, str] = field(default_factory=dict)  # kernel buffer name -> Model state-dict name


@dataclass(frozen=True)
class TensorDecl:
    """A `[tensors]` entry: a buffer the reference does not fix, or a precondition on one it does."""

    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    init: str | None = None  # 'zeros' | 'ones' | 'any'; None = unspecified
    unbounded: bool = False  # `shape = "unbounded"` (safety-only tasks): the caller guarantees the bounds
    values: tuple[int, int] | None = None  # `range = [lo, hi]`: a precondition on an integer input's elements


@dataclass(frozen=True)
class ScalarRange:
    """A `[scalars]` entry of a safety-only task: an integer parameter that takes every value in [lo, hi]."""

    lo: int
    hi: int


@dataclass(frozen=True)
class Task:
    """One validated verification task."""

    name: str
    root: Path
    kernel: KernelSpec
    launch: LaunchSpec
    reference: ReferenceSpec | None  # None: a safety-only task (no equivalence to check)
    tensors: dict[str, TensorDecl] = field(default_factory=dict)
    scalars: dict[str, ScalarRange] = field(default_factory=dict)

    @property
    def safety_only(self) -> bool:
        return self.reference is None


# ---------------------------------------------------------------------------------------------------------
# The TOML schema (shape and types only)
# ---------------------------------------------------------------------------------------------------------

PositiveInt = Annotated[int, Field(ge=1)]
DimList = Annotated[list[PositiveInt], Field(min_length=1, max_length=3)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _KernelModel(_Strict):
    source: str
    entry: Annotated[str, Field(min_length=1)]
    arch: Annotated[str, Field(pattern=ARCH_PATTERN)] = "sm_90"
    signature: dict[str, str] | None = None
    constexprs: dict[str, int | float | bool | str] | None = None
    num_warps: Literal[WARPS_PER_BLOCK] | None = None  # type: ignore[valid-type]
    num_stages: Annotated[int, Field(ge=1, le=8)] | None = None


class _LaunchModel(_Strict):
    grid: DimList
    block: DimList | None = None
    dynamic_shared_bytes: Annotated[int, Field(ge=0)] = 0
    args: list[str | int | float]


class _ReferenceModel(_Strict):
    source: str
    inputs: list[str]
    outputs: Annotated[list[str], Field(min_length=1)]
    parameters: dict[str, str] = {}


class _TensorModel(_Strict):
    shape: list[Annotated[int, Field(ge=0)]] | Literal["unbounded"] | None = None
    dtype: Literal[TORCH_DTYPES] | None = None  # type: ignore[valid-type]
    init: Literal[TENSOR_INITS] | None = None  # type: ignore[valid-type]
    range: Annotated[list[int], Field(min_length=2, max_length=2)] | None = None


class _ScalarModel(_Strict):
    range: Annotated[list[int], Field(min_length=2, max_length=2)]


class _ManifestModel(_Strict):
    name: Annotated[str, Field(min_length=1)] | None = None
    kernel: _KernelModel
    launch: _LaunchModel
    reference: _ReferenceModel | None = None
    tensors: dict[str, _TensorModel] = {}
    scalars: dict[str, _ScalarModel] = {}


# What each field should hold, in words; keys are field patterns ('*' = any table key, '[]' = any index).
EXPECTED: dict[str, str] = {
    "name": "a non-empty string",
    "kernel": "a [kernel] table",
    "kernel.source": "a path (string) to a .cu, .py or .ptx file",
    "kernel.entry": "the kernel's symbol name (a non-empty string)",
    "kernel.arch": 'an architecture like "sm_90" or "sm_90a"',
    "kernel.signature": 'a table of parameter = Triton type, e.g. { x_ptr = "*fp32", n = "i32" }',
    "kernel.signature.*": 'a Triton type string such as "*fp32" or "i32"',
    "kernel.constexprs": "a table of name = integer, float or boolean",
    "kernel.constexprs.*": "an integer, float or boolean",
    "kernel.num_warps": "a power of two from 1 to 32",
    "kernel.num_stages": "an integer from 1 to 8",
    "launch": "a [launch] table",
    "launch.grid": "a list of 1 to 3 positive integers",
    "launch.block": "a list of 1 to 3 positive integers",
    "launch.dynamic_shared_bytes": "a non-negative integer",
    "launch.args": 'a list of tensor names (strings), "null" and numbers',
    "launch.args[]": 'a tensor name (string), "null" (the null pointer) or a number',
    "reference": "a [reference] table",
    "reference.source": "a path (string) to a Python file",
    "reference.inputs": "a list of names (strings)",
    "reference.outputs": "a list of at least one name (string)",
    "reference.parameters": "a table of kernel buffer = Model parameter name",
    "reference.parameters.*": "a Model parameter or buffer name (string)",
    "tensors": "a table of buffer name = { shape, dtype, init, range }",
    "tensors.*": "a table with optional keys shape, dtype, init and range",
    "tensors.*.range": "a list of two integers [lo, hi]: every element of the integer input lies in it",
    "tensors.*.shape": 'a list of non-negative integers, or "unbounded" (safety-only tasks)',
    "tensors.*.dtype": "one of " + ", ".join(f'"{d}"' for d in TORCH_DTYPES),
    "tensors.*.init": 'one of "zeros", "ones" or "any"',
    "scalars": "a table of scalar name = { range = [lo, hi] }",
    "scalars.*": "a table with the key range",
    "scalars.*.range": "a list of two integers [lo, hi]",
}
# Tables whose keys are user-chosen names, so a pattern replaces the key with '*'.
DYNAMIC_TABLES = {"tensors", "scalars", "kernel.signature", "kernel.constexprs", "reference.parameters"}
MODEL_AT: dict[str, type[BaseModel]] = {
    "": _ManifestModel, "kernel": _KernelModel, "launch": _LaunchModel,
    "reference": _ReferenceModel, "tensors.*": _TensorModel, "scalars.*": _ScalarModel,
}


# ---------------------------------------------------------------------------------------------------------
# Turning pydantic's errors into messages that name the field
# ---------------------------------------------------------------------------------------------------------


def _dotted(parts: list[str | int]) -> str:
    """Render a location as users write it in TOML terms: `launch.args[2]`, `tensors.out.shape`."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _pattern(parts: list[str | int]) -> str:
    """The EXPECTED-table key for a location: indices become '[]', user-chosen table keys become '*'."""
    pattern = ""
    for part in parts:
        if isinstance(part, int):
            pattern += "[]"
        elif pattern in DYNAMIC_TABLES:
            pattern += ".*"
        else:
            pattern += f".{part}" if pattern else part
    return pattern


def _present_prefix(data: Any, loc: tuple[str | int, ...]) -> tuple[list[str | int], Any]:
    """The longest prefix of `loc` that exists in the raw TOML data, and the value found there.

    pydantic appends union-member tags ('int', 'str') to locations; they are not in the data, so walking
    the data is what separates a real path from those tags.
    """
    parts: list[str | int] = []
    value = data
    for part in loc:
        if isinstance(value, dict) and part in value or isinstance(value, list) and isinstance(part, int):
            value = value[part]
            parts.append(part)
        else:
            break
    return parts, value


def show_value(value: Any) -> str:
    """A short TOML/JSON-like rendering of the offending value."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(data: dict[str, Any], error: dict[str, Any]) -> tuple[str, str]:
    """One pydantic error → (field, message without the field)."""
    loc = tuple(error["loc"])
    parts, value = _present_prefix(data, loc)
    if error["type"] == "missing":
        parts = parts + [loc[len(parts)]]
        return _dotted(parts), "required key is missing"
    if error["type"] == "extra_forbidden":
        model = MODEL_AT.get(_pattern(parts[:-1]))
        allowed = f" (allowed: {', '.join(model.model_fields)})" if model else ""
        return _dotted(parts), f"unknown key{allowed}"
    for cut in range(len(parts), 0, -1):
        expected = EXPECTED.get(_pattern(parts[:cut]))
        if expected:
            _, value = _present_prefix(data, tuple(parts[:cut]))
            return _dotted(parts[:cut]), f"expected {expected}, got {show_value(value)}"
    return _dotted(parts) or "manifest", error["msg"]


def _schema_error(data: dict[str, Any], exc: ValidationError) -> IntakeError:
    """All distinct problems in one IntakeError; `.field` is the first one's."""
    seen: dict[str, str] = {}
    for error in exc.errors():
        where, what = _describe(data, error)
        seen.setdefault(where, what)
    lines = [f"{where}: {what}" for where, what in seen.items()]
    first = next(iter(seen))
    err = IntakeError(first, seen[first])
    if len(lines) > 1:
        err.args = ("\n".join(lines),)
    return err


# ---------------------------------------------------------------------------------------------------------
# Rules across fields
# ---------------------------------------------------------------------------------------------------------

# (manifest field, axis index, CUDA limit) — hardware limits of every architecture LARK targets.
DIM_LIMITS: tuple[tuple[str, int, int], ...] = (
    ("grid", 0, 2**31 - 1), ("grid", 1, 65535), ("grid", 2, 65535),
    ("block", 0, 1024), ("block", 1, 1024), ("block", 2, 64),
)
MAX_THREADS_PER_BLOCK = 1024
TRITON_ONLY_KEYS = ("signature", "constexprs", "num_warps", "num_stages")


def language_of(source: Path) -> Language:
    """Which frontend a kernel file needs, from its suffix (the contract in DESIGN §2.1)."""
    language = LANGUAGE_BY_SUFFIX.get(source.suffix)
    if language is None:
        raise IntakeError(
            "kernel.source",
            f'"{source.name}" has suffix "{source.suffix}"; expected .cu (CUDA), .py (Triton) or .ptx',
        )
    return language


def _pad3(dims: list[int]) -> Dim3:
    """CUDA dims are 3-D; a manifest may give 1 or 2 and mean 1 for the rest."""
    padded = list(dims) + [1] * (3 - len(dims))
    return padded[0], padded[1], padded[2]


def _existing_file(root: Path, relative: str, where: str) -> Path:
    """Resolve a manifest path against the manifest's folder and insist it is a file."""
    path = (root / relative).resolve()
    if not path.is_file():
        raise IntakeError(where, f"no such file: {path}")
    return path


def _check_dims(grid: Dim3, block: Dim3) -> None:
    """Reject launches a real GPU refuses, so the verdict is about a launch that can happen."""
    dims = {"grid": grid, "block": block}
    for name, axis, limit in DIM_LIMITS:
        if dims[name][axis] > limit:
            raise IntakeError(
                f"launch.{name}",
                f"{name}.{'xyz'[axis]} = {dims[name][axis]} exceeds the CUDA limit of {limit}",
            )
    threads = block[0] * block[1] * block[2]
    if threads > MAX_THREADS_PER_BLOCK:
        raise IntakeError(
            "launch.block", f"{list(block)} is {threads} threads per block; CUDA allows at most 1024"
        )


def _kernel_spec(model: _KernelModel, root: Path) -> KernelSpec:
    """Build the KernelSpec, enforcing which keys belong to which frontend."""
    language = language_of(Path(model.source))
    source = _existing_file(root, model.source, "kernel.source")
    if language == "triton":
        if model.signature is None:
            raise IntakeError(
                "kernel.signature",
                'required for Triton kernels (.py), e.g. signature = { x_ptr = "*fp32", n = "i32" }',
            )
        clash = sorted(set(model.signature) & set(model.constexprs or {}))
        if clash:
            raise IntakeError("kernel.constexprs", f'"{clash[0]}" is also in kernel.signature; give it once')
    else:
        for key in TRITON_ONLY_KEYS:
            if getattr(model, key) is not None:
                raise IntakeError(
                    f"kernel.{key}", f"only Triton kernels (.py) take {key}; this kernel is {language}"
                )
    return KernelSpec(
        source=source, entry=model.entry, arch=model.arch, language=language,
        signature=dict(model.signature or {}), constexprs=_constexprs(model.constexprs or {}),
        num_warps=model.num_warps or 4, num_stages=model.num_stages,
    )


def _constexprs(given: dict[str, int | float | bool | str]) -> dict[str, int | float | bool | str | None]:
    """Triton constexpr values as the kernel receives them: TOML has no null, so the string "None" is None
    (an optional tensor or activation a kernel tests with `is None`); any other string stays a string."""
    return {name: None if value == "None" else value for name, value in given.items()}


def _launch_spec(model: _LaunchModel, kernel: KernelSpec) -> LaunchSpec:
    """Pad dims, derive the Triton block, check CUDA limits and literal arguments."""
    triton_block = (32 * kernel.num_warps, 1, 1)
    if model.block is None:
        if kernel.language != "triton":
            raise IntakeError("launch.block", f"required for {kernel.language} kernels (e.g. block = [256])")
        block = triton_block
    else:
        block = _pad3(model.block)
        if kernel.language == "triton" and block != triton_block:
            raise IntakeError(
                "launch.block",
                f"a Triton kernel with num_warps = {kernel.num_warps} runs {triton_block[0]} threads per "
                f"block, the manifest gives {model.block}",
            )
    grid = _pad3(model.grid)
    _check_dims(grid, block)
    for i, arg in enumerate(model.args):
        if isinstance(arg, float) and not math.isfinite(arg):
            raise IntakeError(f"launch.args[{i}]", f"{arg} is not a real number; LARK reasons over the reals")
    return LaunchSpec(grid, block, model.dynamic_shared_bytes, tuple(model.args))


def _reference_spec(model: _ReferenceModel, root: Path) -> ReferenceSpec:
    """Build the ReferenceSpec; each name may be bound once across inputs, outputs and parameters."""
    owner: dict[str, str] = {}
    named = [("reference.inputs", i, n) for i, n in enumerate(model.inputs)]
    named += [("reference.outputs", i, n) for i, n in enumerate(model.outputs)]
    named += [("reference.parameters", n, n) for n in model.parameters]
    for where, key, name in named:
        here = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}"
        if name in owner:
            raise IntakeError(here, f'"{name}" is already bound by {owner[name]}; each name is bound once')
        owner[name] = here
    return ReferenceSpec(
        source=_existing_file(root, model.source, "reference.source"),
        inputs=tuple(model.inputs), outputs=tuple(model.outputs), parameters=dict(model.parameters),
    )


def _reference_names(reference: ReferenceSpec | None) -> set[str]:
    if reference is None:
        return set()
    return {*reference.inputs, *reference.outputs, *reference.parameters}


def _tensor_decls(models: dict[str, _TensorModel], reference: ReferenceSpec | None) -> dict[str, TensorDecl]:
    """A buffer the reference does not bind must say its own shape and dtype; in a safety-only task that is
    every buffer. Only a safety-only task may leave a size unbounded (no reference output to fill)."""
    from_reference = _reference_names(reference)
    why = "the task has no [reference], so every buffer is declared" if reference is None else None
    decls = {}
    for name, model in models.items():
        if name not in from_reference:
            for key in ("shape", "dtype"):
                if getattr(model, key) is None:
                    raise IntakeError(
                        f"tensors.{name}.{key}", f'required: {why or "the reference does not determine"} "{name}"'
                    )
        unbounded = model.shape == "unbounded"
        if unbounded and reference is not None:
            raise IntakeError(f"tensors.{name}.shape", '"unbounded" is only for safety-only tasks (no [reference])')
        shape = None if model.shape is None or unbounded else tuple(model.shape)
        values = None
        if model.range is not None:
            lo, hi = model.range
            if lo > hi:
                raise IntakeError(f"tensors.{name}.range", f"[{lo}, {hi}] is empty: lo must be at most hi")
            values = (lo, hi)
        decls[name] = TensorDecl(shape=shape, dtype=model.dtype, init=model.init, unbounded=unbounded,
                                 values=values)
    return decls


def _scalar_ranges(models: dict[str, _ScalarModel], reference: ReferenceSpec | None,
                   tensors: dict[str, TensorDecl]) -> dict[str, ScalarRange]:
    """Symbolic scalars: only without a reference (with one, scalars are the reference's inputs)."""
    if models and reference is not None:
        raise IntakeError("scalars", "only a safety-only task (no [reference]) takes [scalars]; "
                                     "with a reference, scalars are its inputs")
    ranges = {}
    for name, model in models.items():
        lo, hi = model.range
        if lo > hi:
            raise IntakeError(f"scalars.{name}.range", f"[{lo}, {hi}] is empty: lo must be at most hi")
        if name in tensors:
            raise IntakeError(f"scalars.{name}", f'"{name}" is also a [tensors] entry; give it once')
        ranges[name] = ScalarRange(lo, hi)
    return ranges


def _check_names(launch: LaunchSpec, reference: ReferenceSpec | None, tensors: dict[str, TensorDecl],
                 scalars: dict[str, ScalarRange] | None = None) -> None:
    """Every name in launch.args is bound, every output is passed, every [tensors] or [scalars] entry is used."""
    scalars = scalars or {}
    bound = {*_reference_names(reference), *tensors, *scalars}
    if NULL in bound:
        raise IntakeError("launch.args", f'"{NULL}" binds a pointer parameter to the null pointer; it cannot also '
                                         "name a tensor, scalar or reference value")
    listing = ", ".join(f'"{n}"' for n in sorted(bound)) or "nothing"
    passed = {arg for arg in launch.args if isinstance(arg, str)}
    for i, arg in enumerate(launch.args):
        if isinstance(arg, str) and arg not in bound and arg != NULL:
            raise IntakeError(
                f"launch.args[{i}]",
                f'"{arg}" is not bound: it is not a reference input, output or parameter, nor a [tensors] '
                f"or [scalars] entry (bound: {listing})",
            )
    for i, out in enumerate(reference.outputs if reference else ()):
        if out not in passed:
            raise IntakeError(
                "launch.args",
                f'reference output "{out}" (reference.outputs[{i}]) is not passed to the kernel, '
                "so nothing could write it",
            )
    known = bound - set(tensors) - set(scalars)
    for table, names in (("tensors", tensors), ("scalars", scalars)):
        for name in names:
            if name not in passed and name not in known:
                raise IntakeError(
                    f"{table}.{name}", f'"{name}" is neither passed in launch.args nor a reference name'
                )


# ---------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------


def _read_toml(path: Path) -> dict[str, Any]:
    """Read the manifest, turning I/O and syntax errors into intake errors that point at the file."""
    if path.is_dir():
        raise IntakeError("manifest", f"{path} is a folder, not a lark.toml")
    if not path.is_file() and path.name == "lark.toml" and path.parent.is_dir():
        raise IntakeError("manifest", f"the folder {path.parent} has no lark.toml")
    if not path.is_file():
        raise IntakeError("manifest", f"no such file: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise IntakeError("manifest", f"{path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise IntakeError("manifest", f"cannot read {path}: {exc}") from None


def load_task(path: Path) -> Task:
    """Load and validate a `lark.toml`; raise IntakeError naming the first field to fix."""
    path = Path(path).absolute()
    data = _read_toml(path)
    try:
        model = _ManifestModel.model_validate(data)
    except ValidationError as exc:
        raise _schema_error(data, exc) from None
    root = path.parent
    kernel = _kernel_spec(model.kernel, root)
    launch = _launch_spec(model.launch, kernel)
    reference = None if model.reference is None else _reference_spec(model.reference, root)
    tensors = _tensor_decls(model.tensors, reference)
    scalars = _scalar_ranges(model.scalars, reference, tensors)
    _check_names(launch, reference, tensors, scalars)
    return Task(model.name or root.name, root, kernel, launch, reference, tensors, scalars)
