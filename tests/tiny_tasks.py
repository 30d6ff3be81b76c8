"""Small tasks written into a test's tmp_path for the pool, cache, actor and batch tests.

Hand-written PTX (no nvcc) copying or doubling a 100x100 float tensor; the reference is a clone. Each kind
has a known verdict, so a test can check that a fleet under fault injection gives exactly these.
"""

from __future__ import annotations

from pathlib import Path

PTX = """//
.version 8.0
.target sm_90
.address_size 64

.visible .entry copy_kernel(
\t.param .u64 copy_kernel_param_0,
\t.param .u64 copy_kernel_param_1,
\t.param .u32 copy_kernel_param_2
)
{{
\t.reg .pred %p<2>;
\t.reg .b32 %r<6>;
\t.reg .f32 %f<3>;
\t.reg .b64 %rd<8>;

\tld.param.u64 %rd1, [copy_kernel_param_0];
\tld.param.u64 %rd2, [copy_kernel_param_1];
\tld.param.u32 %r2, [copy_kernel_param_2];
\tmov.u32 %r3, %ctaid.x;
\tmov.u32 %r4, %ntid.x;
\tmov.u32 %r5, %tid.x;
\tmad.lo.s32 %r1, %r3, %r4, %r5;
\tsetp.ge.s32 %p1, %r1, %r2;
\t@%p1 bra $L__done;
\tcvta.to.global.u64 %rd3, %rd1;
\tcvta.to.global.u64 %rd4, %rd2;
\tmul.wide.s32 %rd5, %r1, 4;
\tadd.s64 %rd6, %rd3, %rd5;
\tld.global.f32 %f1, [%rd6];
\t{value}
\tadd.s64 %rd7, %rd4, %rd5;
\tst.global.f32 [%rd7], %f2;
$L__done:
\tret;
}}
"""

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.clone()


def get_inputs():
    return [torch.randn({rows}, 100)]


def get_init_inputs():
    return []
"""

MANIFEST = """name = "{name}"

[kernel]
source = "kernel.ptx"
entry = "copy_kernel"

[launch]
grid = [{grid}, 1, 1]
block = [256, 1, 1]
args = ["x", "y", {n}]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""

# kind -> (the instruction computing %f2 from %f1, blocks short of a full grid, expected verdict)
KINDS = {
    "copy": ("mov.f32 %f2, %f1;", 0, "verified"),
    "short_grid": ("mov.f32 %f2, %f1;", 1, "refuted"),
    "doubled": ("add.f32 %f2, %f1, %f1;", 0, "refuted"),
    "broken": (None, 0, "error"),
}


def write_task(root: Path, name: str, kind: str, rows: int = 100) -> Path:
    """A task directory under `root`; `rows` varies the reference so that its capture is not cached."""
    value, missing, _ = KINDS[kind]
    folder = root / name
    folder.mkdir(parents=True)
    n = rows * 100
    grid = (n + 255) // 256 - missing
    if value is None:
        (folder / "lark.toml").write_text(f'name = "{name}"\n[launch]\ngrid = [1, 1, 1]\n')
        return folder / "lark.toml"
    (folder / "kernel.ptx").write_text(PTX.format(value=value))
    (folder / "ref.py").write_text(REFERENCE.format(rows=rows))
    (folder / "lark.toml").write_text(MANIFEST.format(name=name, grid=grid, n=n))
    return folder / "lark.toml"


def expected(kind: str) -> str:
    return KINDS[kind][2]


ELEMENTWISE_MANIFEST = """name = "{name}"

[kernel]
source = "{source}"
entry = "{entry}"

[launch]
grid = [{blocks}, 1, 1]
block = [{threads}, 1, 1]
args = ["x", "y", {n}]

[reference]
source = "ref.py"
inputs = ["x"]
outputs = ["y"]
"""

ELEMENTWISE_REF = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {expr}


def get_inputs():
    return [torch.randn({n})]


def get_init_inputs():
    return []
"""


def elementwise_task(directory: Path, name: str, kernel: str, expr: str, n: int, blocks: int, threads: int = 256,
                     source: str = "kernel.cu", entry: str = "k") -> Path:
    """A task y = expr(x) over n elements, `kernel(x, y, n)` launched on `blocks` blocks of `threads`."""
    directory.mkdir()
    (directory / source).write_text(kernel)
    (directory / "ref.py").write_text(ELEMENTWISE_REF.format(expr=expr, n=n))
    (directory / "lark.toml").write_text(ELEMENTWISE_MANIFEST.format(name=name, source=source, entry=entry,
                                                                      blocks=blocks, threads=threads, n=n))
    return directory
