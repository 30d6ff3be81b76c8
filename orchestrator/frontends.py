"""Frontends: turn a kernel source (CUDA C++, Triton, or PTX) into the PTX that LARK verifies.

PTX is the one formal target (DESIGN §5), so each frontend's only job is to produce it and to make sure the
requested entry is in it. Compiler failures are the user's to fix, so they surface as `FrontendError`, an
`IntakeError` (exit status 3) carrying the compiler's own message trimmed to its useful lines. Compiling
costs ~1 s (nvcc) or ~2 s (Triton); the PTX is cached on disk so repeated runs do not pay it.

The cache key covers every input of a compile (issue 13): the source's path and text, the entry, arch and
Triton options, the compiler's version and flags, LARK's package version and the frontend's own code. The
files a compile read beyond those are recorded in the entry with their hashes, and an entry is served only
while each still has its hash: nvcc lists them (`-MD`: the `.cu`, every header it included, the toolkit's
too, ~190 files hashed in ~10 ms); Triton gets, conservatively, every `.py` file in the kernel's folder
tree, which is also in the key (a new sibling module can change what an import finds). A hit runs no
compiler: the nvcc version banner (`nvcc --version`, ~10 ms) is all it asks of the toolkit.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from orchestrator.fingerprint import (
    FileHashes,
    changed_since,
    digest,
    hash_files,
    make_prerequisites,
    python_files,
    python_tree,
    sha256_file,
    unchanged,
)
from orchestrator.manifest import Dim3, IntakeError, KernelSpec
from orchestrator.version import package_version
from semantics.version import source_digest

CACHE_FORMAT = 3  # 3: entries record the files a compile read; bump when the record changes
FRONTEND_SOURCES = ("orchestrator/frontends.py", "orchestrator/fingerprint.py")  # the code that makes an entry
NVCC_FLAGS = ("-ptx", "-O3", "-lineinfo")  # .loc lines let findings name the source line
NVCC_TIMEOUT_S = 300
# FP fusion pinned to Triton 3.9's default so the PTX (and its certificate hash) does not depend on the
# environment; under exact arithmetic an fma and a mul+add mean the same thing.
TRITON_OPTIONS: dict[str, Any] = {"enable_fp_fusion": True}
MESSAGE_LINES = 30

ENTRY_RE = re.compile(r"\.entry\s+([\w$]+)\s*\(")


class FrontendError(IntakeError):
    """A kernel the frontend cannot turn into PTX; the message carries the compiler's explanation."""


@dataclass(frozen=True)
class CompiledKernel:
    """The PTX of one kernel and what the frontend knows about its launch.

    `block` is the thread-block shape the kernel fixes (Triton's 32*num_warps, or a `.reqntid`), None when
    it does not fix one. `user_params` is how many leading PTX parameters `launch.args` binds; None means
    all of them. Triton appends scratch-buffer pointers that its launcher supplies, so it sets this.
    `shared_bytes` is the dynamic shared memory the kernel's own launcher passes (Triton's `metadata.shared`,
    the size of its `extern .shared global_smem`); None when the manifest's launch decides it.
    `param_types` are the source's types of the user parameters, in order, where the source has them
    (Triton's signature, e.g. "*fp32"; PTX pointers are untyped), for checking the bound tensors' dtypes.
    """

    ptx: str
    entry: str
    block: Dim3 | None
    user_params: int | None = None
    shared_bytes: int | None = None
    param_types: tuple[str, ...] | None = None


# ---------------------------------------------------------------------------------------------------------
# PTX inspection shared by every frontend
# ---------------------------------------------------------------------------------------------------------


def ptx_entries(ptx: str) -> list[str]:
    """Names of the kernels (`.entry`) a PTX module defines."""
    return ENTRY_RE.findall(ptx)


def _check_entry(ptx: str, entry: str, source: Path) -> None:
    """Fail early, with the names that do exist, when the manifest's entry is not in the PTX."""
    entries = ptx_entries(ptx)
    if entry in entries:
        return
    found = ", ".join(entries) or "none"
    message = f'no kernel "{entry}" in the PTX of {source.name}; entries found: {found}'
    if any(name.startswith("_Z") for name in entries):
        message += (
            '. Names starting with "_Z" are C++-mangled: declare the kernel extern "C" '
            f'(extern "C" __global__ void {entry}(...)) so its PTX name is its C name'
        )
    raise FrontendError("kernel.entry", message)


def _reqntid(ptx: str, entry: str) -> Dim3 | None:
    """The block shape an entry requires via `.reqntid`, if it declares one."""
    header = re.search(rf"\.entry\s+{re.escape(entry)}\s*\([^)]*\)([^{{]*)\{{", ptx)
    found = header and re.search(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", header.group(1))
    if not found:
        return None
    x, y, z = (int(d) if d else 1 for d in found.groups())
    return x, y, z


def _trim(text: str, from_error: bool = True, limit: int = MESSAGE_LINES) -> str:
    """The useful part of a compiler's message: blank lines dropped, capped, and (for nvcc, whose
    warnings come first) starting at the first error line."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    first = next((i for i, line in enumerate(lines) if "error" in line.lower()), 0) if from_error else 0
    kept = lines[first:first + limit]
    if len(lines) - first > limit:
        kept.append(f"... ({len(lines) - first - limit} more lines)")
    return "\n".join(kept)


# ---------------------------------------------------------------------------------------------------------
# CUDA C++ via nvcc
# ---------------------------------------------------------------------------------------------------------


def _nvcc() -> str:
    """Path of nvcc, or a FrontendError that says how to proceed without it."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise FrontendError(
            "kernel.source",
            "nvcc was not found on PATH; it is needed to compile CUDA kernels (.cu). Install the CUDA "
            "toolkit, or give the kernel as .ptx",
        )
    return nvcc


def _nvcc_version(nvcc: str) -> str:
    """nvcc's version banner, part of the cache key: a new compiler may emit different PTX. Asked once per
    process and binary: a toolkit installed over the old one (a new file or a moved link) is asked again."""
    real = os.path.realpath(nvcc)
    stat = os.stat(real)
    return _nvcc_banner(real, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=4)
def _nvcc_banner(nvcc: str, _size: int, _mtime_ns: int) -> str:
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60)
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "unknown"


def _run_nvcc(spec: KernelSpec, outputs: list[str], timeout_s: float = NVCC_TIMEOUT_S) -> subprocess.CompletedProcess:
    """nvcc with LARK's flags on the spec's source; a timeout or a failure is a FrontendError."""
    cmd = [_nvcc(), *NVCC_FLAGS, f"-arch={spec.arch}", *outputs, str(spec.source)]
    limit = max(min(timeout_s, NVCC_TIMEOUT_S), 0.1)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise FrontendError("kernel.source", f"nvcc ran over {limit:.1f} s on {spec.source} (the time left of "
                                             f"the task's --timeout, at most {NVCC_TIMEOUT_S} s)") from None
    if proc.returncode != 0:
        detail = _trim(proc.stderr or proc.stdout)
        raise FrontendError("kernel.source", f"nvcc could not compile {spec.source.name}:\n{detail}")
    return proc


def _compile_cuda(spec: KernelSpec, timeout_s: float) -> tuple[CompiledKernel, list[Path] | None]:
    """nvcc -ptx into a temporary folder, with the files it read (`-MD`; None if nvcc wrote no list, and
    then nothing is cached); nvcc's diagnostics become the FrontendError's message."""
    with tempfile.TemporaryDirectory(prefix="lark-nvcc-") as tmp:
        out, deps = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.d"
        _run_nvcc(spec, ["-MD", "-MF", str(deps), "-o", str(out)], timeout_s)
        ptx = out.read_text(encoding="utf-8")
        read = make_prerequisites(deps.read_text(encoding="utf-8"), Path.cwd()) if deps.is_file() else None
    _check_entry(ptx, spec.entry, spec.source)
    return CompiledKernel(ptx, spec.entry, _reqntid(ptx, spec.entry)), read or None


def _cuda_dependencies(spec: KernelSpec) -> list[Path]:
    """The files a compile of `spec` would read, by a preprocessing-only run (`-M`, ~0.2 s)."""
    return make_prerequisites(_run_nvcc(spec, ["-M"]).stdout, Path.cwd())


# ---------------------------------------------------------------------------------------------------------
# Triton via triton.compile (no GPU needed)
# ---------------------------------------------------------------------------------------------------------


@contextmanager
def _folder_modules(folder: Path) -> Iterator[None]:
    """The kernel's folder first on sys.path, and no module named like one of its files in sys.modules,
    before or after. sys.modules is a cache keyed by name only: without this, `import helper` would be
    served the `helper` an earlier kernel imported (this kernel's before an edit, or another task's)."""
    names = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir()
                                                      if p.is_dir() and p.name.isidentifier()}
    shadowed = {n: m for n, m in sys.modules.items() if n.split(".")[0] in names}
    for name in shadowed:
        del sys.modules[name]
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n.split(".")[0] in names]:
            del sys.modules[name]
        sys.modules.update(shadowed)


def _import_user_module(source: Path) -> ModuleType:
    """Execute the user's kernel file as a module, with its folder importable for sibling helpers."""
    name = "_lark_kernel_" + hashlib.sha256(str(source).encode()).hexdigest()[:16]
    module_spec = importlib.util.spec_from_file_location(name, source)
    if module_spec is None or module_spec.loader is None:
        raise FrontendError("kernel.source", f"cannot import {source} as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and the like look their module up while it executes
    try:
        with _folder_modules(source.resolve().parent):
            module_spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        message = f"importing {source.name} failed: {type(exc).__name__}: {exc}"
        raise FrontendError("kernel.source", message) from None
    finally:
        sys.modules.pop(name, None)
    return module


def _jit_function(module: ModuleType, spec: KernelSpec) -> Any:
    """The @triton.jit function named by `entry`, looking through @autotune/@heuristics wrappers."""
    from triton.runtime.jit import JITFunction

    obj = getattr(module, spec.entry, None)
    while obj is not None and not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
        obj = obj.fn
    if not isinstance(obj, JITFunction):
        found = sorted(k for k, v in vars(module).items() if isinstance(v, JITFunction)) or ["none"]
        raise FrontendError(
            "kernel.entry",
            f'no @triton.jit function "{spec.entry}" in {spec.source.name}; found: {", ".join(found)}',
        )
    return obj


def _check_triton_type(name: str, ty: str) -> None:
    """Triton answers an unknown type with a bare KeyError; say which parameter and what is allowed."""
    from triton.language import str_to_ty

    try:
        str_to_ty(ty, None)
    except Exception:
        raise FrontendError(
            f"kernel.signature.{name}",
            f'"{ty}" is not a Triton type; use e.g. "*fp32", "*fp16", "*bf16", "*i32", "i32", "i64", "fp32"',
        ) from None


def _triton_signature(fn: Any, spec: KernelSpec) -> tuple[dict[str, str], dict[str, Any]]:
    """Match the manifest's signature/constexprs to the function's parameters, in parameter order."""
    names = [p.name for p in fn.params]
    unknown = sorted((set(spec.signature) | set(spec.constexprs)) - set(names))
    if unknown:
        raise FrontendError(
            "kernel.signature", f'"{unknown[0]}" is not a parameter of {spec.entry}({", ".join(names)})'
        )
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for param in fn.params:
        name, has_default = param.name, param.default is not inspect.Parameter.empty
        if name in spec.constexprs or param.is_constexpr and has_default and name not in spec.signature:
            signature[name] = "constexpr"
            constexprs[name] = spec.constexprs.get(name, param.default)
        elif param.is_constexpr:
            raise FrontendError(
                "kernel.constexprs", f'"{name}" is a tl.constexpr of {spec.entry}: give its value here'
            )
        elif name in spec.signature:
            _check_triton_type(name, spec.signature[name])
            signature[name] = spec.signature[name]
        else:
            raise FrontendError(
                "kernel.signature", f'parameter "{name}" of {spec.entry} needs a type here, e.g. "i32"'
            )
    return signature, constexprs


def _triton_message(exc: Exception, fn: Any, source: Path) -> str:
    """Triton's own explanation; its line numbers count from the `def`, so add the file's line."""
    node = getattr(exc, "node", None)
    where = ""
    if getattr(exc, "src", None) == fn.src and hasattr(node, "lineno"):
        where = f" (at {source.name}:{fn.def_file_line_number + node.lineno - 1})"
    text = str(exc) if type(exc).__module__.startswith("triton") else f"{type(exc).__name__}: {exc}"
    return f"Triton could not compile {fn.__name__}{where}:\n{_trim(text, from_error=False)}"


def _compile_triton(spec: KernelSpec, timeout_s: float) -> tuple[CompiledKernel, list[Path]]:
    """triton.compile for an sm_NN target without a GPU, with line info (findings name the Python line),
    and the files it may have read (the folder's `.py` tree). Triton's own on-disk cache gets a throwaway
    folder: its key is Triton's idea of the kernel's dependencies, and ours is the one that decides. It
    compiles in-process (~2 s), so `timeout_s` only decides whether it starts: the job's deadline stops
    what follows."""
    if timeout_s <= 0:
        raise FrontendError("kernel.source", "no time is left of the task's --timeout to compile the kernel")
    import triton
    from triton import knobs

    fn = _jit_function(_import_user_module(spec.source), spec)
    signature, constexprs = _triton_signature(fn, spec)
    target = triton.backends.compiler.GPUTarget("cuda", int(re.sub(r"\D", "", spec.arch)), 32)
    source = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    options = {**TRITON_OPTIONS, "num_warps": spec.num_warps}
    if spec.num_stages is not None:   # (absent: Triton's own default, as before the field existed)
        options["num_stages"] = spec.num_stages
    with knobs.compilation.scope(), knobs.cache.scope(), tempfile.TemporaryDirectory(prefix="lark-triton-") as tmp:
        knobs.compilation.disable_line_info = False
        knobs.cache.dir = tmp
        try:
            compiled = triton.compile(source, target=target, options=options)
        except Exception as exc:
            raise FrontendError("kernel.source", _triton_message(exc, fn, spec.source)) from None
    ptx = compiled.asm["ptx"]
    _check_entry(ptx, spec.entry, spec.source)
    types = tuple(ty for ty in signature.values() if ty != "constexpr")
    kernel = CompiledKernel(ptx, spec.entry, (32 * spec.num_warps, 1, 1), len(types), int(compiled.metadata.shared),
                            types)
    return kernel, python_files(spec.source)


# ---------------------------------------------------------------------------------------------------------
# Dispatch and the on-disk cache
# ---------------------------------------------------------------------------------------------------------

Compiler = Callable[[KernelSpec, float], tuple[CompiledKernel, list[Path] | None]]  # spec, timeout -> PTX, files read
COMPILERS: dict[str, Compiler] = {
    "cuda": _compile_cuda,
    "triton": _compile_triton,
}


def _compiler_identity(language: str) -> dict[str, Any]:
    """Compiler version and options: everything besides the sources that shapes the PTX."""
    if language == "cuda":
        return {"nvcc": _nvcc_version(_nvcc()), "flags": list(NVCC_FLAGS)}
    return {"triton": importlib.metadata.version("triton"), "options": TRITON_OPTIONS, "line_info": True}


def cache_dir() -> Path:
    """Where compiled PTX lives: $LARK_CACHE_DIR/ptx, else ~/.cache/lark/ptx."""
    root = os.environ.get("LARK_CACHE_DIR")
    return Path(root) / "ptx" if root else Path.home() / ".cache" / "lark" / "ptx"


def _compile_record(spec: KernelSpec) -> dict[str, Any]:
    """What is known about a compile before it runs, besides where the source lies: the source's hash, the
    entry and frontend options, the compiler identity, LARK's package version and frontend code; for Triton
    also the folder's `.py` tree. Headers are checked against the cache entry instead."""
    record = {
        "format": CACHE_FORMAT, "lark": package_version(), "frontend": source_digest(FRONTEND_SOURCES),
        "language": spec.language, "sha256": sha256_file(spec.source), "entry": spec.entry, "arch": spec.arch,
        "signature": spec.signature, "constexprs": spec.constexprs, "num_warps": spec.num_warps,
        **({"num_stages": spec.num_stages} if spec.num_stages is not None else {}),
        "compiler": _compiler_identity(str(spec.language)),
    }
    if spec.language == "triton":
        record["tree"] = python_tree(spec.source)
    return record


def cache_key(spec: KernelSpec) -> str:
    """SHA-256 of the compile record and the source's absolute path (its quoted includes are found beside
    it, so the same text elsewhere is another compile)."""
    return digest({**_compile_record(spec), "source": str(spec.source.resolve())})


def _cache_load(key: str) -> tuple[CompiledKernel, FileHashes] | None:
    """A cached compile and the files it read, or None: a missing or unreadable entry, or one whose files
    do not all still have their recorded hashes, is a miss (the cache is only an optimization)."""
    try:
        record = json.loads((cache_dir() / f"{key}.json").read_text(encoding="utf-8"))
        inputs, fields = record["inputs"], record["kernel"]
        if not unchanged(inputs):
            return None
        block = tuple(fields["block"]) if fields["block"] is not None else None
        types = tuple(fields["param_types"]) if fields.get("param_types") is not None else None
        kernel = CompiledKernel(fields["ptx"], fields["entry"], block, fields["user_params"], fields["shared_bytes"],
                                types)
        return kernel, inputs
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _cache_store(key: str, kernel: CompiledKernel, inputs: FileHashes) -> None:
    """Write atomically (temp file + rename) so concurrent workers never read half an entry."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"kernel": asdict(kernel), "inputs": inputs}, f)
        os.replace(tmp, folder / f"{key}.json")
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _read_source(spec: KernelSpec) -> str:
    try:
        return spec.source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FrontendError("kernel.source", f"cannot read {spec.source}: {exc}") from None


def compile_kernel(spec: KernelSpec, timeout_s: float = NVCC_TIMEOUT_S) -> CompiledKernel:
    """PTX for the kernel a manifest names, from the cache when the same compile of the same files was
    done before, else compiled within `timeout_s` seconds. An entry is not stored when a file it read was
    modified after the compile began (the compiler may have read the old bytes)."""
    text = _read_source(spec)
    if spec.language == "ptx":
        _check_entry(text, spec.entry, spec.source)
        return CompiledKernel(text, spec.entry, _reqntid(text, spec.entry))
    key = cache_key(spec)
    cached = _cache_load(key)
    if cached is not None:
        return cached[0]
    started_ns = time.time_ns()
    kernel, read = COMPILERS[str(spec.language)](spec, timeout_s)
    if read is not None and not changed_since(read, started_ns):
        _cache_store(key, kernel, hash_files(read))
    return kernel


def kernel_inputs(spec: KernelSpec) -> dict[str, Any]:
    """Everything a compile of `spec` depends on, for keys outside this cache (`lark batch`'s resume key):
    the compile record and the files read with their hashes. The files come from a valid cache entry when
    there is one, else from the frontend's own rule (nvcc `-M`, the `.py` tree, the `.ptx` itself). When
    they cannot be known (nvcc missing, a preprocessing error) the answer is unique: nothing is reused."""
    if spec.language == "ptx":
        return {"inputs": hash_files([spec.source])}
    try:
        _read_source(spec)
        record = _compile_record(spec)
        cached = _cache_load(cache_key(spec))
        if cached is not None:
            return {"record": record, "inputs": cached[1]}
        read = _cuda_dependencies(spec) if spec.language == "cuda" else python_files(spec.source)
    except FrontendError as exc:
        return {"unknowable": str(exc), "nonce": uuid.uuid4().hex}
    return {"record": record, "inputs": hash_files(read)}
