"""Frontends: CUDA (nvcc), Triton and PTX sources become PTX with the entry checked, errors explained."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from orchestrator import frontends
from orchestrator.frontends import CompiledKernel, FrontendError, compile_kernel
from orchestrator.manifest import IntakeError, KernelSpec

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc (CUDA toolkit) not on PATH")
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton not installed")

RELU_CU = """\
extern "C" __global__ void relu(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
"""

RELU_PY = """\
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


@triton.jit
def broken(x_ptr, n):
    tl.store(x_ptr, tl.no_such_function(n))
"""
RELU_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}

TINY_PTX = """\
.version 8.0
.target sm_90
.address_size 64

.visible .entry noop(
\t.param .u64 noop_param_0
)
.reqntid 64, 2
{
\tret;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test compiles into its own cache, so hits and misses are the test's own."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LARK_CACHE_DIR", str(cache))
    return cache


def source(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def frontend_error(spec: KernelSpec) -> FrontendError:
    with pytest.raises(FrontendError) as info:
        compile_kernel(spec)
    return info.value


# --- CUDA -------------------------------------------------------------------------------------------------


@needs_nvcc
def test_cuda_kernel_compiles_with_its_entry(tmp_path: Path) -> None:
    kernel = compile_kernel(KernelSpec(source=source(tmp_path, "relu.cu", RELU_CU), entry="relu"))
    assert kernel.entry == "relu" and kernel.block is None and kernel.user_params is None
    assert ".entry relu(" in kernel.ptx and ".target sm_90" in kernel.ptx
    assert ".loc" in kernel.ptx  # line info: findings name the source line


@needs_nvcc
def test_mangled_name_gets_extern_c_advice(tmp_path: Path) -> None:
    cu = source(tmp_path, "relu.cu", RELU_CU.replace('extern "C" ', ""))
    err = frontend_error(KernelSpec(source=cu, entry="relu"))
    assert err.field == "kernel.entry" and isinstance(err, IntakeError)
    assert "_Z4reluPKfPfi" in str(err) and 'extern "C"' in str(err)


@needs_nvcc
def test_cuda_syntax_error_carries_nvcc_message(tmp_path: Path) -> None:
    cu = source(tmp_path, "relu.cu", RELU_CU.replace("0.0f);", "0.0f) + undefined_thing;"))
    err = frontend_error(KernelSpec(source=cu, entry="relu"))
    assert err.field == "kernel.source"
    assert 'relu.cu(3): error: identifier "undefined_thing" is undefined' in str(err)


def test_missing_nvcc_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    err = frontend_error(KernelSpec(source=source(tmp_path, "relu.cu", RELU_CU), entry="relu"))
    assert err.field == "kernel.source" and "nvcc was not found on PATH" in str(err)


@needs_nvcc
def test_cache_hit_skips_the_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    calls: list[str] = []

    def counting(spec: KernelSpec, timeout_s: float) -> tuple[CompiledKernel, list[Path] | None]:
        calls.append(spec.entry)
        return frontends._compile_cuda(spec, timeout_s)

    monkeypatch.setitem(frontends.COMPILERS, "cuda", counting)
    cu = source(tmp_path, "relu.cu", RELU_CU)
    first = compile_kernel(KernelSpec(source=cu, entry="relu"))
    second = compile_kernel(KernelSpec(source=cu, entry="relu"))
    assert calls == ["relu"] and second == first
    assert len(list((private_cache / "ptx").glob("*.json"))) == 1
    compile_kernel(KernelSpec(source=cu, entry="relu", arch="sm_80"))  # other options: another entry
    cu.write_text(RELU_CU.replace("0.0f", "1.0f"))  # other source text: another entry
    compile_kernel(KernelSpec(source=cu, entry="relu"))
    assert len(calls) == 3


# --- PTX --------------------------------------------------------------------------------------------------


def test_ptx_passes_through(tmp_path: Path) -> None:
    kernel = compile_kernel(KernelSpec(source=source(tmp_path, "noop.ptx", TINY_PTX), entry="noop"))
    assert kernel == CompiledKernel(TINY_PTX, "noop", (64, 2, 1))


def test_ptx_entry_must_exist(tmp_path: Path) -> None:
    err = frontend_error(KernelSpec(source=source(tmp_path, "noop.ptx", TINY_PTX), entry="relu"))
    assert err.field == "kernel.entry" and 'no kernel "relu"' in str(err) and "noop" in str(err)


# --- Triton -----------------------------------------------------------------------------------------------


def triton_spec(tmp_path: Path, entry: str = "relu_kernel", **kw) -> KernelSpec:
    kw.setdefault("signature", RELU_SIGNATURE)
    kw.setdefault("constexprs", {"BLOCK": 512})
    return KernelSpec(source=source(tmp_path, "kernel.py", RELU_PY), entry=entry, **kw)


@needs_triton
def test_triton_relu_compiles(tmp_path: Path) -> None:
    kernel = compile_kernel(triton_spec(tmp_path, num_warps=4))
    assert kernel.entry == "relu_kernel" and kernel.block == (128, 1, 1)
    assert ".entry relu_kernel(" in kernel.ptx and ".reqntid 128" in kernel.ptx
    assert kernel.user_params == 3  # Triton appends scratch pointers its launcher passes
    assert ".loc" in kernel.ptx  # line info: findings name the Python line


@needs_triton
def test_triton_unknown_type_names_the_parameter(tmp_path: Path) -> None:
    err = frontend_error(triton_spec(tmp_path, signature={**RELU_SIGNATURE, "x_ptr": "*fp99"}))
    assert err.field == "kernel.signature.x_ptr" and '"*fp99" is not a Triton type' in str(err)


@needs_triton
def test_triton_signature_must_cover_parameters(tmp_path: Path) -> None:
    err = frontend_error(triton_spec(tmp_path, signature={"x_ptr": "*fp32", "y_ptr": "*fp32"}))
    assert err.field == "kernel.signature" and 'parameter "n"' in str(err)
    err = frontend_error(triton_spec(tmp_path, signature={**RELU_SIGNATURE, "m": "i32"}))
    assert err.field == "kernel.signature" and '"m" is not a parameter' in str(err)


@needs_triton
def test_triton_wrong_signature_carries_triton_message(tmp_path: Path) -> None:
    err = frontend_error(triton_spec(tmp_path, signature={**RELU_SIGNATURE, "x_ptr": "i32"}))
    assert err.field == "kernel.source" and "Triton could not compile relu_kernel" in str(err)
    assert "Unsupported ptr type" in str(err)


@needs_triton
def test_triton_compile_error_points_at_the_line(tmp_path: Path) -> None:
    spec = triton_spec(tmp_path, "broken", signature={"x_ptr": "*fp32", "n": "i32"}, constexprs={})
    err = frontend_error(spec)
    assert "(at kernel.py:15)" in str(err) and "no_such_function" in str(err)


@needs_triton
def test_triton_entry_must_be_a_jit_function(tmp_path: Path) -> None:
    err = frontend_error(triton_spec(tmp_path, "relu"))
    assert err.field == "kernel.entry" and "broken, relu_kernel" in str(err)


@needs_triton
def test_triton_import_failure(tmp_path: Path) -> None:
    bad = source(tmp_path, "kernel.py", "import no_such_module\n")
    spec = KernelSpec(source=bad, entry="k", signature={})
    err = frontend_error(spec)
    assert err.field == "kernel.source" and "no_such_module" in str(err)
