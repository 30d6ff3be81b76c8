"""Tests for the PTX parser: real nvcc and Triton output, each operand form, and syntax errors.

Real PTX is generated here (nvcc once per module for all CUDA kernels, Triton once) so the tests follow
whatever the installed toolchains emit; the assertions are structural facts that hold across versions.
"""

from __future__ import annotations

import inspect
import re
import shutil
import struct
import subprocess
import warnings
from pathlib import Path

import pytest

from semantics.ptx.ast import Addr, FloatImm, Instr, IntImm, Kernel, Label, Module, Reg, Sym, VarDecl, Vec
from semantics.ptx.parser import PtxSyntaxError, parse_ptx

CUDA_SOURCE = r"""
extern "C" __global__ void add_guard(const float* __restrict__ x, const float* __restrict__ y,
                                     float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] + y[i];
}

extern "C" __global__ void transpose2d(const float* in, float* out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

extern "C" __global__ void block_sum(const float* x, float* out, int n) {
    __shared__ float s[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0;
        for (int k = 0; k < blockDim.x / 32; ++k) t += s[k];
        out[blockIdx.x] = t;
    }
}

extern "C" __global__ void grid_stride(const double* x, double* y, long n) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x)
        y[i] = 2.0 * x[i] + 1.0;
}

extern "C" __global__ void vec4_scale(const float4* in, float4* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float4 v = in[i]; v.x *= 1.5f; out[i] = v; }
}

__device__ __noinline__ float helper(float a) { return a * a + 1.0f; }
__constant__ float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ int counter = 7;

extern "C" __global__ void with_call(float* x) {
    extern __shared__ float dyn[];
    dyn[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = helper(dyn[threadIdx.x ^ 1]) * coeffs[threadIdx.x & 3] + counter;
    if (threadIdx.x == 0) atomicAdd(&counter, 1);
}
"""

KERNEL_NAMES = {"add_guard", "transpose2d", "block_sum", "grid_stride", "vec4_scale", "with_call"}


# ---------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def nvcc_ptx(tmp_path_factory: pytest.TempPathFactory) -> str:
    """All CUDA kernels above compiled in one nvcc call (about a second)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    work = tmp_path_factory.mktemp("nvcc")
    (work / "kernels.cu").write_text(CUDA_SOURCE)
    subprocess.run(
        ["nvcc", "-ptx", "-arch=sm_90", "-O3", "kernels.cu", "-o", "kernels.ptx"],
        cwd=work,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return (work / "kernels.ptx").read_text()


@pytest.fixture(scope="module")
def nvcc_module(nvcc_ptx: str) -> Module:
    return parse_ptx(nvcc_ptx)


def _triton_softmax():
    """A Triton kernel with masked loads, a cross-warp reduction (shared memory, barrier) and stores."""
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def softmax_row(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + row * n + offs, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, 0))
        tl.store(out_ptr + row * n + offs, e / tl.sum(e, 0), mask=mask)

    return triton, softmax_row


@pytest.fixture(scope="module")
def triton_case() -> tuple[str, range]:
    """Triton PTX for `softmax_row` and the source lines of that function (for `.loc` checks)."""
    triton, fn = _triton_softmax()
    from triton.backends.compiler import GPUTarget

    source = triton.compiler.ASTSource(
        fn=fn,
        signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 512},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    lines, first = inspect.getsourcelines(fn.fn)
    return compiled.asm["ptx"], range(first, first + len(lines))


# ---------------------------------------------------------------------------------------------- helpers


def _instrs(kernel: Kernel, opcode: str, *mods: str) -> list[Instr]:
    """Instructions with this opcode whose modifiers include all of `mods`."""
    return [
        i for i in kernel.body if isinstance(i, Instr) and i.opcode == opcode and set(mods) <= set(i.mods)
    ]


def _all_operands(kernel: Kernel):
    for item in kernel.body:
        if isinstance(item, Instr):
            for op in item.operands:
                yield op
                if isinstance(op, Vec):
                    yield from op.elems


def _f64_bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


HEADER = ".version 8.5\n.target sm_90\n.address_size 64\n"


def _kernel(body: str, params: str = ".param .u64 k_param_0", extra: str = "") -> Kernel:
    """Parse one hand-written kernel `k` with the given body lines."""
    return parse_ptx(f"{HEADER}{extra}.visible .entry k({params})\n{{\n{body}\n}}\n").kernels["k"]


def _operand(text: str):
    """The last operand of `mov.b32 %r1, <text>;`."""
    (instr,) = _kernel(f"  mov.b32 %r1, {text};").body
    return instr.operands[-1]


# ---------------------------------------------------------------------------------------------- nvcc


def test_nvcc_module_header_and_kernels(nvcc_module: Module) -> None:
    assert re.fullmatch(r"\d+\.\d+", nvcc_module.version)
    assert nvcc_module.target == "sm_90"
    assert nvcc_module.address_size == 64
    assert set(nvcc_module.kernels) == KERNEL_NAMES  # the .func helper is not a kernel


def test_nvcc_params(nvcc_module: Module) -> None:
    params = nvcc_module.kernels["add_guard"].params
    assert [p.name for p in params] == [f"add_guard_param_{i}" for i in range(4)]
    assert [p.type for p in params] == [".u64", ".u64", ".u64", ".u32"]
    gs = nvcc_module.kernels["grid_stride"].params
    assert [p.type for p in gs] == [".u64", ".u64", ".u64"]


def test_nvcc_register_ranges_are_expanded(nvcc_ptx: str, nvcc_module: Module) -> None:
    for chunk in nvcc_ptx.split(".entry ")[1:]:
        kernel = nvcc_module.kernels[chunk.split("(", 1)[0].strip()]
        declared = re.findall(r"\.reg\s+(\.\w+)\s+(%\w+)<(\d+)>;", chunk.split(".entry ")[0])
        assert declared
        for type_, prefix, count in declared:
            assert all(kernel.regs[f"{prefix}{i}"] == type_ for i in range(int(count)))
            assert f"{prefix}{count}" not in kernel.regs
    regs = nvcc_module.kernels["add_guard"].regs
    assert regs["%p0"] == ".pred" and regs["%f0"] == ".f32" and regs["%rd0"] == ".b64"


def test_nvcc_guarded_elementwise(nvcc_module: Module) -> None:
    k = nvcc_module.kernels["add_guard"]
    (branch,) = _instrs(k, "bra")
    assert branch.pred is not None and branch.pred[0].startswith("%p")
    (target,) = branch.operands
    assert isinstance(target, Sym) and target.name.startswith("$L__")
    assert any(isinstance(i, Label) and i.name == target.name for i in k.body)
    loads = _instrs(k, "ld", ".global", ".nc", ".f32")  # __restrict__ const -> non-coherent loads
    assert len(loads) == 2 and all(isinstance(i.operands[1], Addr) for i in loads)
    assert isinstance(loads[0].operands[1].base, Reg)
    param_loads = _instrs(k, "ld", ".param")
    assert {i.operands[1].base for i in param_loads} == {Sym(f"add_guard_param_{i}") for i in range(4)}
    (store,) = _instrs(k, "st", ".global", ".f32")
    assert isinstance(store.operands[0], Addr)
    specials = {op.name for op in _all_operands(k) if isinstance(op, Reg) and "." in op.name}
    assert {"%tid.x", "%ntid.x", "%ctaid.x"} <= specials
    assert isinstance(k.body[-1], Instr) and k.body[-1].opcode == "ret" and k.body[-1].operands == ()


def test_nvcc_transpose_uses_2d_special_registers(nvcc_module: Module) -> None:
    k = nvcc_module.kernels["transpose2d"]
    specials = {op.name for op in _all_operands(k) if isinstance(op, Reg) and "." in op.name}
    assert {"%tid.x", "%tid.y", "%ntid.x", "%ntid.y", "%ctaid.x", "%ctaid.y"} <= specials
    assert _instrs(k, "mad", ".lo", ".s32")
    assert _instrs(k, "ld", ".global", ".f32") and _instrs(k, "st", ".global", ".f32")


def test_nvcc_shared_memory_barrier_and_shuffle(nvcc_module: Module) -> None:
    k = nvcc_module.kernels["block_sum"]
    (smem,) = k.vars
    assert smem == VarDecl(name=smem.name, space=".shared", type=".b8", align=4, size_bytes=128)
    assert smem.name.endswith("1s")
    assert Sym(smem.name) in set(_all_operands(k))  # its address is taken with mov
    bars = _instrs(k, "bar", ".sync")
    assert bars and all(b.operands == (IntImm(0),) for b in bars)
    shuffles = _instrs(k, "shfl", ".sync", ".down", ".b32")
    assert len(shuffles) == 5
    pair = shuffles[0].operands[0]
    assert isinstance(pair, Vec) and len(pair.elems) == 2
    assert pair.elems[1].name.startswith("%p") and k.regs[pair.elems[1].name] == ".pred"
    shared_loads = [a for i in _instrs(k, "ld", ".shared") for a in i.operands if isinstance(a, Addr)]
    assert any(a.offset > 0 for a in shared_loads)  # the unrolled loop reads [%r+4], [%r+8], ...
    assert IntImm(-1) in set(_all_operands(k))  # the full-warp mask


def test_nvcc_grid_stride_loop(nvcc_module: Module) -> None:
    k = nvcc_module.kernels["grid_stride"]
    assert {i.opcode for i in k.body if isinstance(i, Instr)} >= {"fma", "bra", "ld", "st"}
    immediates = set(_all_operands(k))
    assert FloatImm(_f64_bits(2.0), 64) in immediates and FloatImm(_f64_bits(1.0), 64) in immediates
    label_at = {item.name: pos for pos, item in enumerate(k.body) if isinstance(item, Label)}
    backward = [
        pos
        for pos, item in enumerate(k.body)
        if isinstance(item, Instr) and item.opcode == "bra" and label_at[item.operands[0].name] < pos
    ]
    assert backward  # the loop
    assert "%nctaid.x" in {op.name for op in _all_operands(k) if isinstance(op, Reg)}


def test_nvcc_vector_loads_and_stores(nvcc_module: Module) -> None:
    k = nvcc_module.kernels["vec4_scale"]
    (load,) = _instrs(k, "ld", ".global", ".v4", ".f32")
    (store,) = _instrs(k, "st", ".global", ".v4", ".f32")
    assert isinstance(load.operands[0], Vec) and len(load.operands[0].elems) == 4
    assert all(isinstance(e, Reg) for e in load.operands[0].elems)
    assert isinstance(store.operands[1], Vec) and isinstance(store.operands[0], Addr)
    assert FloatImm(0x3FC00000, 32) in set(_all_operands(k))  # 1.5f


def test_nvcc_calls_module_variables_and_dynamic_shared(nvcc_module: Module) -> None:
    by_name = {v.name: v for v in nvcc_module.vars}
    assert by_name["coeffs"] == VarDecl("coeffs", ".const", ".b8", 4, 16)
    assert by_name["counter"] == VarDecl("counter", ".global", ".u32", 4, 4)
    assert by_name["dyn"] == VarDecl("dyn", ".shared", ".b8", 16, None, extern=True)
    k = nvcc_module.kernels["with_call"]
    (call,) = _instrs(k, "call")
    rets, callee, args = call.operands
    assert rets == Vec((Sym("retval0"),)) and callee == Sym("_Z6helperf") and args == Vec((Sym("param0"),))
    assert k.vars == []  # call-sequence `.param` declarations are not kernel state
    assert k.regs["temp_param_reg"] == ".b32"  # declared inside the call-sequence block
    assert _instrs(k, "atom", ".global", ".add", ".u32")


def test_nvcc_instruction_lines_point_at_the_instruction(nvcc_ptx: str, nvcc_module: Module) -> None:
    lines = nvcc_ptx.splitlines()
    for kernel in nvcc_module.kernels.values():
        for item in kernel.body:
            if isinstance(item, Instr):
                assert (item.opcode + "".join(item.mods)) in lines[item.line - 1]
            else:
                assert lines[item.line - 1].strip() == f"{item.name}:"


# ---------------------------------------------------------------------------------------------- Triton


def test_triton_kernel(triton_case: tuple[str, range]) -> None:
    ptx, source_lines = triton_case
    module = parse_ptx(ptx)
    (kernel,) = module.kernels.values()
    assert kernel.name == "softmax_row"
    assert module.target.startswith("sm_90")
    assert kernel.directives[".reqntid"][0] == 128  # 4 warps
    ptrs = kernel.params[:2]
    assert all(p.is_ptr and p.type == ".u64" and p.align == 1 for p in ptrs)
    assert kernel.params[2].type == ".u32" and not kernel.params[2].is_ptr
    smem = {v.name: v for v in module.vars}["global_smem"]
    assert smem.extern and smem.space == ".shared" and smem.size_bytes is None and smem.align == 16
    guarded_loads = [i for i in _instrs(kernel, "ld", ".global") if i.pred is not None]
    assert guarded_loads
    for load in guarded_loads:
        assert isinstance(load.operands[0], Vec) and load.operands[1] == Addr(load.operands[1].base, 0)
    assert _instrs(kernel, "bar", ".sync") and _instrs(kernel, "shfl", ".sync", ".bfly", ".b32")


def test_triton_debug_locations(triton_case: tuple[str, range]) -> None:
    ptx, source_lines = triton_case
    module = parse_ptx(ptx)
    (kernel,) = module.kernels.values()
    this_file = [idx for idx, path in module.files.items() if Path(path).name == Path(__file__).name]
    assert len(this_file) == 1
    instrs = [i for i in kernel.body if isinstance(i, Instr)]
    assert all(i.loc is not None for i in instrs)
    own = {i.loc[1] for i in instrs if i.loc[0] == this_file[0]}
    assert own and own <= set(source_lines) | {source_lines.start - 1}
    assert len(own) >= 4  # loads, the reductions, the exp, the store sit on different lines


# ---------------------------------------------------------------------------------------------- operands


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", IntImm(0)),
        ("0x0", IntImm(0)),
        ("0xFFFFFFFF", IntImm(0xFFFFFFFF)),
        ("4294967295U", IntImm(4294967295)),
        ("-1", IntImm(-1)),
        ("-0x10", IntImm(-16)),
        ("017", IntImm(15)),
        ("0b101", IntImm(5)),
        ("0f3F800000", FloatImm(0x3F800000, 32)),
        ("0F7F800000", FloatImm(0x7F800000, 32)),
        ("-0f3F800000", FloatImm(0xBF800000, 32)),
        ("0d3FF0000000000000", FloatImm(0x3FF0000000000000, 64)),
        ("1.5", FloatImm(_f64_bits(1.5), 64)),
        ("-2.5e-3", FloatImm(_f64_bits(-2.5e-3), 64)),
        ("%r2", Reg("%r2")),
        ("%tid.x", Reg("%tid.x")),
        ("%ntid.y", Reg("%ntid.y")),
        ("%ctaid.z", Reg("%ctaid.z")),
        ("%nctaid.x", Reg("%nctaid.x")),
        ("%laneid", Reg("%laneid")),
        ("%warpid", Reg("%warpid")),
        ("%clock", Reg("%clock")),
        ("%envreg3", Reg("%envreg3")),
        ("smem", Sym("smem")),
        ("$L__BB0_2", Sym("$L__BB0_2")),
        ("[%rd5]", Addr(Reg("%rd5"), 0)),
        ("[%rd16+128]", Addr(Reg("%rd16"), 128)),
        ("[%rd1+-4]", Addr(Reg("%rd1"), -4)),
        ("[%rd1-8]", Addr(Reg("%rd1"), -8)),
        ("[ %rd1 + 0 ]", Addr(Reg("%rd1"), 0)),
        ("[%rd1+16+0x10]", Addr(Reg("%rd1"), 32)),
        ("[k_param_0]", Addr(Sym("k_param_0"), 0)),
        ("[smem+4]", Addr(Sym("smem"), 4)),
        ("{%f1, %f2, %f3, %f4}", Vec((Reg("%f1"), Reg("%f2"), Reg("%f3"), Reg("%f4")))),
        ("{ %r1 }", Vec((Reg("%r1"),))),
        ("{%r1, _}", Vec((Reg("%r1"), Sym("_")))),
        ("%r3|%p1", Vec((Reg("%r3"), Reg("%p1")))),
        ("[%rd1, {%r2, %r3}]", Vec((Addr(Reg("%rd1"), 0), Vec((Reg("%r2"), Reg("%r3")))))),
    ],
)
def test_operand_forms(text: str, expected: object) -> None:
    assert _operand(text) == expected


def test_instruction_shape_and_predicates() -> None:
    k = _kernel("""
  @%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
  @!%p2 bra.uni $L__BB0_2;
$L__BB0_2:
  shfl.sync.down.b32 %r1|%p1, %r2, 16, 31, -1;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 16, [%r2];
  bar.sync 0;
  exit;
  ret;""")
    ld, bra, label, shfl, cp, bar, exit_, ret = k.body
    assert (ld.opcode, ld.mods, ld.pred, ld.line) == ("ld", (".global", ".v4", ".b32"), ("%p1", False), 7)
    assert (bra.opcode, bra.mods, bra.pred, bra.operands) == (
        "bra",
        (".uni",),
        ("%p2", True),
        (Sym("$L__BB0_2"),),
    )
    assert label == Label("$L__BB0_2", 9)
    assert shfl.operands == (Vec((Reg("%r1"), Reg("%p1"))), Reg("%r2"), IntImm(16), IntImm(31), IntImm(-1))
    assert cp.mods == (".async", ".bulk", ".shared::cluster", ".global", ".mbarrier::complete_tx::bytes")
    assert bar.operands == (IntImm(0),)
    assert (exit_.opcode, exit_.operands, ret.opcode) == ("exit", (), "ret")


def test_call_with_parenthesised_lists() -> None:
    k = _kernel(
        """
  {
  .param .b64 param0;
  .param .b32 retval0;
  st.param.b64 [param0], %rd1;
  call.uni (retval0), vprintf, (param0, param1);
  call.uni _Z4stopv, ();
  }""",
        extra=".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n",
    )
    _, call1, call2 = k.body
    assert call1.operands == (Vec((Sym("retval0"),)), Sym("vprintf"), Vec((Sym("param0"), Sym("param1"))))
    assert call2.operands == (Sym("_Z4stopv"), Vec(()))
    assert k.vars == []


def test_params_and_performance_directives() -> None:
    text = (
        HEADER
        + """
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0,
	.param .u64 .ptr .global .align 16 k_param_1,
	.param .align 8 .b8 k_param_2[16],
	.param .f32 k_param_3
)
.maxntid 256, 1, 1
.minnctapersm 2
.maxnreg 64
{
	ret;
}
.entry k2() .reqntid 128, 1, 1 { ret; }
"""
    )
    module = parse_ptx(text)
    k = module.kernels["k"]
    assert [(p.name, p.type, p.is_ptr, p.align) for p in k.params] == [
        ("k_param_0", ".u64", True, 1),
        ("k_param_1", ".u64", True, 16),
        ("k_param_2", ".b8", False, 8),
        ("k_param_3", ".f32", False, None),
    ]
    assert k.directives == {".maxntid": (256, 1, 1), ".minnctapersm": (2,), ".maxnreg": (64,)}
    assert module.kernels["k2"].directives == {".reqntid": (128, 1, 1)} and module.kernels["k2"].params == []


def test_declarations_in_the_body() -> None:
    k = _kernel("""
	.reg .pred 	%p<3>;
	.reg .b32 	%r<45>;
	.reg .f64 	%fd1, %fd2;
	.reg .v4 .f32 %v<2>;
	.shared .align 4 .b8 _ZZ4kE1s[512];
	.shared .f32 tile[32][33];
	.local .align 8 .b8 __local_depot0[32];
	.extern .shared .align 16 .b8 dyn[];
	ret;""")
    assert len([r for r in k.regs if r.startswith("%r")]) == 45 and k.regs["%r44"] == ".b32"
    assert "%r45" not in k.regs and k.regs["%p2"] == ".pred" and k.regs["%fd2"] == ".f64"
    assert k.regs["%v1"] == ".v4.f32"
    assert k.vars == [
        VarDecl("_ZZ4kE1s", ".shared", ".b8", 4, 512),
        VarDecl("tile", ".shared", ".f32", None, 32 * 33 * 4),
        VarDecl("__local_depot0", ".local", ".b8", 8, 32),
        VarDecl("dyn", ".shared", ".b8", 16, None, extern=True),
    ]


def test_module_scope_variables_functions_and_sections() -> None:
    text = (
        HEADER
        + """
.extern .shared .align 16 .b8 global_smem[];
.global .align 4 .b8 table[2][3] = {{1, 2, 3}, {4, 5, 6}};
.visible .const .align 8 .f64 scale = 0d3FF8000000000000;
.global .align 8 .u64 self_ptr = generic(table)+8;
.visible .global .attribute(.managed) .align 4 .u32 managed_v = 3;
.func (.param .b32 func_retval0) _Z6helperf(.param .b32 _Z6helperf_param_0)
{
	.reg .f32 %f<3>;
	ld.param.f32 %f1, [_Z6helperf_param_0];
	st.param.f32 [func_retval0], %f1;
	ret;
}
.weak .func nothing();
.visible .entry k() { ret; }
	.section	.debug_abbrev
	{
.b8 1                                   // Abbreviation Code
.b8 17, 1
.b32 .debug_abbrev
.b64 $L__func_begin0
	}
	.section	.debug_str
	{
$L__info_string0:
.b8 107
.b8 0
	}
	.section	.debug_macinfo	{	}
"""
    )
    module = parse_ptx(text)
    assert list(module.kernels) == ["k"]
    assert module.vars == [
        VarDecl("global_smem", ".shared", ".b8", 16, None, extern=True),
        VarDecl("table", ".global", ".b8", 4, 6),
        VarDecl("scale", ".const", ".f64", 8, 8),
        VarDecl("self_ptr", ".global", ".u64", 8, 8),
        VarDecl("managed_v", ".global", ".u32", 4, 4),
    ]


def test_scoping_blocks_are_flattened() -> None:
    k = _kernel("""
	.reg .b32 %r<3>;
	.reg .b16 tmp;
	{
	.reg .pred p;
	.reg .b32 tmp;
	setp.ne.b32 p, %r1, 0;
	@p mov.b32 tmp, %r1;
	@!p add.s32 %r2, tmp, 1;
	}
	{ .reg .pred p; setp.eq.b32 p, %r2, 0; }
	mov.b16 tmp, 1;""")
    setp, mov, add, setp2, mov16 = k.body
    assert k.regs["p"] == ".pred" and k.regs["tmp"] == ".b16" and k.regs["tmp$1"] == ".b32"
    assert setp.operands[0] == Reg("p") and mov.pred == ("p", False) and add.pred == ("p", True)
    assert mov.operands[0] == Reg("tmp$1") and add.operands[1] == Reg("tmp$1")  # the inner tmp
    assert setp2.operands[0] == Reg("p") and mov16.operands[0] == Reg("tmp")  # the outer tmp


def test_loc_and_file_directives() -> None:
    text = (
        HEADER
        + """
.visible .entry k()
{
	mov.u32 %r1, %tid.x;
	.loc	1 14 0                          // t.py:14:0
$L__func_begin0:
	.loc	1 15 11
	mov.u32 %r2, %ctaid.x;
	// begin inline asm
	.loc	2 216 16, function_name $L__info_string0, inlined_at 1 19 13 // standard.py:216:16
	@%p1 ld.global.b32 { %r3 }, [ %rd1 + 0 ];
	// end inline asm
	/* a block
		comment */
	.pragma "nounroll";
	ret;
}
	.file	1 "/tmp/t.py"
	.file	2 "/lib/standard.py", 1700000000, 1234
"""
    )
    module = parse_ptx(text)
    first, label, second, third, ret = module.kernels["k"].body
    assert first.loc is None and second.loc == (1, 15) and third.loc == (2, 216) and ret.loc == (2, 216)
    assert (first.line, second.line, third.line, ret.line) == (7, 11, 14, 19)
    assert module.files == {1: "/tmp/t.py", 2: "/lib/standard.py"}


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "line", "fragment"),
    [
        ("  add.s32 %r1, %r2\n  ret;", 7, "'ret'"),  # missing ';' noticed at the next token
        ("  add.s32 %r1, %r2 # 3;", 6, "'#'"),
        ("  ld.global.f32 %f1, [%rd1+];", 6, "']'"),
        ("  mov.u32 %r1, 08;", 6, "octal"),
        ("  and.pred %p1, !%p2, %p3;", 6, "!%p2"),
        ("L:\nL:\n  ret;", 7, "defined twice"),
        ("  .reg .b32 %r<4>\n  ret;", 7, "'ret'"),
    ],
)
def test_syntax_errors_name_the_line(body: str, line: int, fragment: str) -> None:
    with pytest.raises(PtxSyntaxError) as info:
        _kernel(body)
    assert info.value.line == line
    assert f"line {line}" in str(info.value) and fragment in str(info.value)


def test_unterminated_body_is_an_error() -> None:
    with pytest.raises(PtxSyntaxError, match="end of input"):
        parse_ptx(HEADER + ".visible .entry k()\n{\n  ret;\n")


def test_garbage_at_module_scope_is_an_error() -> None:
    with pytest.raises(PtxSyntaxError, match=r"line 4, column 1"):
        parse_ptx(HEADER + "mov.u32 %r1, 0;\n")
