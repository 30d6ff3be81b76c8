"""Intake of lark.toml: valid manifests load; each kind of mistake is an IntakeError naming its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.bindings import check_bindings
from orchestrator.manifest import IntakeError, KernelSpec, Task, TensorDecl, load_task

VECTOR_ADD = """\
name = "vector_add_50000"

[kernel]
source = "kernel.cu"
entry = "vadd"

[launch]
grid = [196, 1, 1]
block = [256, 1, 1]
args = ["a", "b", "c", 50000]

[reference]
source = "ref.py"
inputs = ["a", "b"]
outputs = ["c"]
"""

TRANSPOSE = """\
[kernel]
source = "kernel.cu"
entry = "transpose_naive"
arch = "sm_90a"

[launch]
grid = [32, 19]
block = [16, 16]
dynamic_shared_bytes = 1024
args = ["x", "y", 300, 500]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""

TRITON_RELU = """\
name = "triton_relu_300x1001"

[kernel]
source = "kernel.py"
entry = "relu_kernel"
signature = { x_ptr = "*fp32", y_ptr = "*fp32", n = "i32" }
constexprs = { BLOCK = 512 }
num_warps = 4

[launch]
grid = [587, 1, 1]
args = ["x", "y", 300300]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""


PLACEHOLDERS = ("kernel.cu", "kernel.py", "ref.py")


def write_task(folder: Path, manifest: str, files: tuple[str, ...] = PLACEHOLDERS) -> Path:
    """A task folder with the manifest and empty placeholder sources (intake never reads them)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in files:
        (folder / name).write_text("")
    path = folder / "lark.toml"
    path.write_text(manifest)
    return path


def intake_error(tmp_path: Path, manifest: str, **kw) -> IntakeError:
    """The IntakeError that loading this manifest raises."""
    with pytest.raises(IntakeError) as info:
        load_task(write_task(tmp_path / "task", manifest, **kw))
    return info.value


def edit(manifest: str, old: str, new: str) -> str:
    """Replace one line of a manifest, insisting it was there (so a typo here fails loudly)."""
    assert old in manifest
    return manifest.replace(old, new)


# --- valid manifests ----------------------------------------------------------------------------------------


def test_cuda_manifest_loads(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "p01", VECTOR_ADD))
    assert task.name == "vector_add_50000"
    assert task.root == tmp_path / "p01"
    assert task.kernel.source == tmp_path / "p01" / "kernel.cu"
    assert (task.kernel.language, task.kernel.entry, task.kernel.arch) == ("cuda", "vadd", "sm_90")
    assert task.launch.grid == (196, 1, 1) and task.launch.block == (256, 1, 1)
    assert task.launch.args == ("a", "b", "c", 50000)
    assert task.reference.inputs == ("a", "b") and task.reference.outputs == ("c",)
    assert task.reference.source == tmp_path / "p01" / "ref.py"


def test_dims_are_padded_and_name_defaults_to_folder(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "transpose_300x500", TRANSPOSE))
    assert task.name == "transpose_300x500"
    assert task.launch.grid == (32, 19, 1) and task.launch.block == (16, 16, 1)
    assert task.launch.dynamic_shared_bytes == 1024
    assert task.kernel.arch == "sm_90a"


def test_triton_manifest_loads_with_block_from_num_warps(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "p08", TRITON_RELU))
    assert task.kernel.language == "triton"
    assert task.kernel.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    assert task.kernel.constexprs == {"BLOCK": 512} and task.kernel.num_warps == 4
    assert task.launch.block == (128, 1, 1)


def test_triton_constexprs_may_be_strings_or_none(tmp_path: Path) -> None:
    manifest = edit(TRITON_RELU, "constexprs = { BLOCK = 512 }",
                    'constexprs = { BLOCK = 512, ACT = "gelu", BIAS = "None", EPS = 1e-5, AFFINE = true }')
    task = load_task(write_task(tmp_path / "t", manifest))
    assert task.kernel.constexprs == {"BLOCK": 512, "ACT": "gelu", "BIAS": None, "EPS": 1e-5, "AFFINE": True}
    error = intake_error(tmp_path / "u", edit(TRITON_RELU, "constexprs = { BLOCK = 512 }", "constexprs = { B = [1] }"))
    assert error.field == "kernel.constexprs.B"


def test_a_value_range_on_a_tensor(tmp_path: Path) -> None:
    manifest = VECTOR_ADD + '\n[tensors]\na = { range = [0, 9] }\n'
    assert load_task(write_task(tmp_path / "t", manifest)).tensors["a"].values == (0, 9)
    error = intake_error(tmp_path / "u", VECTOR_ADD + '\n[tensors]\na = { range = [9, 0] }\n')
    assert error.field == "tensors.a.range" and "empty" in str(error)


def test_tensors_table(tmp_path: Path) -> None:
    manifest = edit(VECTOR_ADD, '"c", 50000]', '"c", "scratch", 50000]')
    manifest += '\n[tensors]\nscratch = { shape = [4, 8], dtype = "float32", init = "zeros" }\n'
    manifest += 'c = { init = "zeros" }\n'
    task = load_task(write_task(tmp_path / "t", manifest))
    assert task.tensors["scratch"] == TensorDecl(shape=(4, 8), dtype="float32", init="zeros")
    assert task.tensors["c"] == TensorDecl(shape=None, dtype=None, init="zeros")


def test_kernel_spec_derives_language_from_suffix(tmp_path: Path) -> None:
    assert KernelSpec(source=tmp_path / "k.ptx", entry="k").language == "ptx"
    with pytest.raises(IntakeError) as info:
        KernelSpec(source=tmp_path / "k.cpp", entry="k")
    assert info.value.field == "kernel.source"


# --- one test per kind of intake error ---------------------------------------------------------------


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(IntakeError) as info:
        load_task(tmp_path / "nowhere" / "lark.toml")
    assert info.value.field == "manifest" and "nowhere" in str(info.value)


def test_missing_kernel_source(tmp_path: Path) -> None:
    err = intake_error(tmp_path, VECTOR_ADD, files=("ref.py",))
    assert err.field == "kernel.source"
    assert str(err).startswith("kernel.source: no such file: ")
    assert str(tmp_path / "task" / "kernel.cu") in str(err)


def test_missing_reference_source(tmp_path: Path) -> None:
    err = intake_error(tmp_path, VECTOR_ADD, files=("kernel.cu",))
    assert err.field == "reference.source" and "ref.py" in str(err)


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, "grid = [196, 1, 1]", "grid = [196, 1, 1"))
    assert err.field == "manifest" and "not valid TOML" in str(err) and "line" in str(err)


def test_unknown_key(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, 'entry = "vadd"', 'entry = "vadd"\ncolour = "red"'))
    assert err.field == "kernel.colour"
    assert str(err).startswith("kernel.colour: unknown key")


def test_wrong_type(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, 'entry = "vadd"', "entry = 3"))
    assert err.field == "kernel.entry" and "got 3" in str(err)


def test_missing_key(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, 'entry = "vadd"\n', ""))
    assert str(err) == "kernel.entry: required key is missing"


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ('"abc"', 'expected a list of 1 to 3 positive integers, got "abc"'),
        ("[1, 0, 1]", "positive integers, got [1, 0, 1]"),
        ("[1, 1, 1, 1]", "1 to 3 positive integers"),
        ("[true]", "positive integers, got [true]"),
        ("[1, 65536]", "grid.y = 65536 exceeds the CUDA limit of 65535"),
        ("[2147483648]", "grid.x = 2147483648 exceeds the CUDA limit of 2147483647"),
    ],
)
def test_bad_grid(tmp_path: Path, grid: str, words: str) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, "grid = [196, 1, 1]", f"grid = {grid}"))
    assert err.field == "launch.grid" and words in str(err)


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ("[2048]", "block.x = 2048 exceeds the CUDA limit of 1024"),
        ("[1, 1, 65]", "block.z = 65 exceeds the CUDA limit of 64"),
        ("[64, 32]", "2048 threads per block"),
    ],
)
def test_bad_block(tmp_path: Path, block: str, words: str) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, "block = [256, 1, 1]", f"block = {block}"))
    assert err.field == "launch.block" and words in str(err)


def test_cuda_needs_block(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, "block = [256, 1, 1]\n", ""))
    assert err.field == "launch.block" and "required" in str(err)


def test_triton_block_must_match_num_warps(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(TRITON_RELU, "grid = [587, 1, 1]", "grid = [587]\nblock = [256]"))
    assert err.field == "launch.block" and "128 threads" in str(err)


def test_bad_arch(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, 'entry = "vadd"', 'entry = "vadd"\narch = "gfx90a"'))
    assert err.field == "kernel.arch" and '"gfx90a"' in str(err)


def test_bad_suffix(tmp_path: Path) -> None:
    manifest = edit(VECTOR_ADD, 'source = "kernel.cu"', 'source = "kernel.cpp"')
    err = intake_error(tmp_path, manifest, files=("kernel.cpp", "ref.py"))
    assert err.field == "kernel.source" and ".cpp" in str(err) and ".cu" in str(err)


def test_missing_triton_signature(tmp_path: Path) -> None:
    manifest = edit(TRITON_RELU, 'signature = { x_ptr = "*fp32", y_ptr = "*fp32", n = "i32" }\n', "")
    err = intake_error(tmp_path, manifest)
    assert err.field == "kernel.signature" and "required for Triton" in str(err)


def test_triton_keys_rejected_for_cuda(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, 'entry = "vadd"', 'entry = "vadd"\nnum_warps = 4'))
    assert err.field == "kernel.num_warps" and "only Triton" in str(err)


def test_unbound_name(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, '"c", 50000]', '"z", 50000]'))
    assert err.field == "launch.args[2]"
    assert str(err).startswith('launch.args[2]: "z" is not bound') and '"a", "b", "c"' in str(err)


def test_non_finite_literal(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, '"c", 50000]', '"c", inf]'))
    assert err.field == "launch.args[3]" and "not a real number" in str(err)


def test_output_must_be_passed(tmp_path: Path) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, '"c", 50000]', '"a", 50000]'))
    assert err.field == "launch.args" and 'output "c"' in str(err)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ('inputs = ["a", "b"]', 'inputs = ["a", "a"]', "reference.inputs[1]"),
        ('outputs = ["c"]', 'outputs = ["a"]', "reference.outputs[0]"),
        ('outputs = ["c"]', 'outputs = ["c"]\nparameters = { b = "w" }', "reference.parameters.b"),
    ],
)
def test_duplicate_names(tmp_path: Path, old: str, new: str, field: str) -> None:
    err = intake_error(tmp_path, edit(VECTOR_ADD, old, new))
    assert err.field == field and "already bound" in str(err)


def test_unbound_tensor_needs_shape_and_dtype(tmp_path: Path) -> None:
    manifest = edit(VECTOR_ADD, '"c", 50000]', '"c", "tmp", 50000]')
    manifest += '\n[tensors]\ntmp = { dtype = "float32" }\n'
    err = intake_error(tmp_path, manifest)
    assert err.field == "tensors.tmp.shape"


def test_bad_tensor_dtype(tmp_path: Path) -> None:
    manifest = edit(VECTOR_ADD, '"c", 50000]', '"c", "tmp", 50000]')
    manifest += '\n[tensors]\ntmp = { shape = [4], dtype = "float33" }\n'
    err = intake_error(tmp_path, manifest)
    assert err.field == "tensors.tmp.dtype" and '"float33"' in str(err) and '"float32"' in str(err)


# --- check_bindings: what needs the compiled kernel -------------------------------------------------


@pytest.fixture
def vadd_task(tmp_path: Path) -> Task:
    return load_task(write_task(tmp_path / "p01", VECTOR_ADD))


TENSORS = {"a": "tensor:float32", "b": "tensor:float32", "c": "tensor:float32"}
VADD_PARAMS = [(f"vadd_param_{i}", ".u64", False) for i in range(3)]


def test_bindings_accept_matching_kernel(vadd_task: Task) -> None:
    check_bindings(vadd_task, [*VADD_PARAMS, ("vadd_param_3", ".u32", False)], TENSORS)
    check_bindings(vadd_task, [*VADD_PARAMS, ("vadd_param_3", ".s32", False)], TENSORS)
    check_bindings(vadd_task, [*VADD_PARAMS, ("vadd_param_3", ".b64", False)], TENSORS)


def test_bindings_arg_count_mismatch(vadd_task: Task) -> None:
    with pytest.raises(IntakeError) as info:
        check_bindings(vadd_task, VADD_PARAMS, TENSORS)
    assert str(info.value) == "launch.args: kernel vadd has 3 parameters, manifest gives 4 arguments"


def test_bindings_tensor_needs_64_bit_parameter(vadd_task: Task) -> None:
    params = [*VADD_PARAMS, ("vadd_param_3", ".u32", False)]
    params[1] = ("vadd_param_1", ".u32", False)
    with pytest.raises(IntakeError) as info:
        check_bindings(vadd_task, params, TENSORS)
    assert info.value.field == "launch.args[1]"
    assert '"b" (a float32 tensor)' in str(info.value) and "vadd_param_1" in str(info.value)
    assert ".u32" in str(info.value)


@pytest.mark.parametrize(
    ("literal", "ptype", "ok"),
    [
        ("50000", ".u16", True), ("70000", ".u16", False), ("-1", ".u32", False), ("-1", ".s32", True),
        ("2147483648", ".s32", False), ("2147483648", ".u32", True), ("2147483648", ".s64", True),
        ("4294967295", ".b32", True), ("-2147483648", ".b32", True), ("4294967296", ".b32", False),
        ("1.5", ".f32", True), ("1.5", ".b64", True), ("1.5", ".u32", False), ("1", ".f32", False),
    ],
)
def test_bindings_literal_width(tmp_path: Path, literal: str, ptype: str, ok: bool) -> None:
    task = load_task(write_task(tmp_path / "t", edit(VECTOR_ADD, '"c", 50000]', f'"c", {literal}]')))
    params = [*VADD_PARAMS, ("vadd_param_3", ptype, False)]
    if ok:
        check_bindings(task, params, TENSORS)
        return
    with pytest.raises(IntakeError) as info:
        check_bindings(task, params, TENSORS)
    assert info.value.field == "launch.args[3]"
    assert literal in str(info.value) and ptype in str(info.value) and "vadd_param_3" in str(info.value)


def test_bindings_scalar_reference_inputs(tmp_path: Path) -> None:
    manifest = edit(VECTOR_ADD, '"c", 50000]', '"c", "alpha"]')
    manifest = edit(manifest, 'inputs = ["a", "b"]', 'inputs = ["a", "b", "alpha"]')
    task = load_task(write_task(tmp_path / "t", manifest))
    kinds = {**TENSORS, "alpha": "scalar:float"}
    check_bindings(task, [*VADD_PARAMS, ("p3", ".f32", False)], kinds)
    with pytest.raises(IntakeError) as info:
        check_bindings(task, [*VADD_PARAMS, ("p3", ".s32", False)], kinds)
    assert info.value.field == "launch.args[3]" and '"alpha"' in str(info.value)
    check_bindings(task, [*VADD_PARAMS, ("p3", ".s32", False)], {**kinds, "alpha": "scalar:int"})
    with pytest.raises(IntakeError):
        check_bindings(task, [*VADD_PARAMS, ("p3", ".f64", False)], {**kinds, "alpha": "scalar:int"})
