"""Optional pointers (issue 16, item 1): a `"null"` launch argument is the null pointer. Both executors give
`p == 0` true for it and false for a bound buffer, and an access through it is out of bounds; the manifest
accepts "null" only for a 64-bit pointer parameter."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3

from orchestrator.bindings import check_bindings
from orchestrator.manifest import IntakeError, load_task
from semantics.concrete import SparseBuffer, run_blocks
from semantics.errors import Unsupported
from semantics.ptx.bind import bind
from semantics.ptx.machine import Buffer, Launch, null_allocation
from semantics.ptx.parser import parse_ptx
from semantics.ptx.symexec import execute

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
# y[0] = (p == 0) ? 1 : 0, with the comparison after cvta as nvcc sometimes emits it; then, where p is not
# null, y[1] = p[0] (the guarded load of `p != nullptr ? p[0] : 0`).
TEST_NULL = HEAD + """.visible .entry t(.param .u64 t_param_0, .param .u64 t_param_1)
{
.reg .pred %p<3>; .reg .b32 %r<4>; .reg .b64 %rd<5>;
ld.param.u64 %rd1, [t_param_0];
ld.param.u64 %rd2, [t_param_1];
cvta.to.global.u64 %rd3, %rd2;
cvta.to.global.u64 %rd4, %rd1;
setp.eq.s64 %p1, %rd4, 0;
selp.u32 %r1, 1, 0, %p1;
st.global.u32 [%rd3], %r1;
@%p1 bra $L_done;
ld.global.u32 %r2, [%rd4];
st.global.u32 [%rd3+4], %r2;
$L_done:
ret;
}
"""
# An unguarded store through the first parameter.
STORE = HEAD + """.visible .entry t(.param .u64 t_param_0)
{
.reg .b32 %r<2>; .reg .b64 %rd<3>;
ld.param.u64 %rd1, [t_param_0];
cvta.to.global.u64 %rd2, %rd1;
mov.u32 %r1, 7;
st.global.u32 [%rd2+8], %r1;
ret;
}
"""
LAUNCH = Launch((1, 1, 1), (1, 1, 1))
Y = Buffer("y", "int32", 2, 4, "output")
P = Buffer("p", "int32", 1, 4, "input")


def _symbolic_stores(text: str, pointer: Buffer) -> dict[int, int]:
    kernel = parse_ptx(text).kernels["t"]
    buffers = {"y": Y, pointer.name: pointer}
    ctx = bind(kernel, LAUNCH, [pointer, Y], buffers)
    execute(kernel, ctx)
    found = {}
    for a in ctx.accesses:
        if a.kind == "store" and z3.is_true(z3.simplify(a.guard)):
            value = z3.simplify(a.values[0])
            found[z3.simplify(a.offset).as_long() // 4] = value.as_long() if z3.is_bv_value(value) else value
    return found


def _concrete_stores(text: str, pointer: Buffer) -> dict[int, int]:
    kernel = parse_ptx(text).kernels["t"]
    sparse = {"y": SparseBuffer(Y), pointer.name: SparseBuffer(pointer, {0: 5} if pointer.numel else {})}
    result = run_blocks(kernel, LAUNCH, [pointer, Y], sparse, [(0, 0, 0)])
    assert result.completed
    return dict(result.written["y"])


@pytest.mark.parametrize("run", [_symbolic_stores, _concrete_stores])
def test_null_compares_equal_to_zero_and_a_buffer_does_not(run):
    assert run(TEST_NULL, null_allocation(0)) == {0: 1}
    stored = run(TEST_NULL, P)
    assert stored[0] == 0 and 1 in stored


def test_an_access_through_null_is_out_of_bounds_in_both_executors():
    kernel = parse_ptx(STORE).kernels["t"]
    null = null_allocation(0)
    result = run_blocks(kernel, LAUNCH, [null], {null.name: SparseBuffer(null)}, [(0, 0, 0)])
    assert result.halted is not None and result.halted.kind == "out_of_bounds"
    assert result.halted.buffer == null.name and result.halted.offset == 8
    ctx = bind(kernel, LAUNCH, [null], {null.name: null})
    execute(kernel, ctx)
    (store,) = [a for a in ctx.accesses if a.kind == "store"]
    assert store.buffer == null.name and null.size_bytes == 0


def test_a_moved_pointer_compared_with_zero_is_unsupported():
    text = TEST_NULL.replace("setp.eq.s64 %p1, %rd4, 0;", "add.s64 %rd4, %rd4, 4;\nsetp.eq.s64 %p1, %rd4, 0;")
    kernel = parse_ptx(text).kernels["t"]
    with pytest.raises(Unsupported, match="comparison of a pointer"):
        execute(kernel, bind(kernel, LAUNCH, [P, Y], {"y": Y, "p": P}))


def _manifest(tmp_path: Path, args: str, extra: str = "") -> Path:
    (tmp_path / "k.ptx").write_text(STORE)
    path = tmp_path / "lark.toml"
    path.write_text(f'name = "n"\n[kernel]\nsource = "k.ptx"\nentry = "t"\n[launch]\ngrid = [1]\nblock = [1]\n'
                    f'args = {args}\n[tensors]\n{extra}')
    return path


def test_null_binds_only_a_64_bit_pointer_parameter(tmp_path):
    task = load_task(_manifest(tmp_path, '["null"]'))
    check_bindings(task, [("t_param_0", ".u64", True)], {})
    with pytest.raises(IntakeError, match=r"launch.args\[0\].*64-bit pointer"):
        check_bindings(task, [("t_param_0", ".u32", False)], {})


def test_null_cannot_name_a_tensor(tmp_path):
    path = _manifest(tmp_path, '["null"]', 'null = { shape = [4], dtype = "float32" }\n')
    with pytest.raises(IntakeError, match="null pointer"):
        load_task(path)
