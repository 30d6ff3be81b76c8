"""The library sequences nvcc 13.0 (-O3, sm_90) inlines for libm calls, as data: one template per function.

Each template is the PTX text nvcc emits for `y = f(x)` (`%x` the argument, `%y` the result at the end of the
text; constants inline, which is the same term as nvcc's `mov.f32 %f, const`). `semantics/ptx/idioms.py`
recognises them by value and replaces each by `lark.ideal.<fn>.<type>`, whose meaning is `fn(x)` by the
axiom the template names (`semantics/axioms.py`, each row citing the template's fingerprint).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Idiom:
    """One library sequence: `ptx` computes `%y = fn(%x)` on `type` values, by the axiom named `axiom`.

    `fusable`: the template ends in a multiplication nvcc may contract with a following addition."""

    name: str
    fn: str
    type: str
    axiom: str
    ptx: str
    fusable: bool = False

    @property
    def text(self) -> str:
        """The template, one instruction a line, stripped: what the fingerprint covers."""
        return "\n".join(line.strip() for line in self.ptx.strip().splitlines() if line.strip())

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:12]

    @property
    def instructions(self) -> int:
        return sum(1 for line in self.text.splitlines() if line.endswith(";") and line not in ("{", "}"))


EXPF = Idiom("expf", "exp", ".f32", "nvcc.expf", fusable=True, ptx="""
    fma.rn.f32 %t2, %x, 0f3BBB989D, 0f3F000000;
    cvt.sat.f32.f32 %t3, %t2;
    fma.rm.f32 %t6, %t3, 0f437C0000, 0f4B400001;
    add.f32 %t7, %t6, 0fCB40007F;
    neg.f32 %t8, %t7;
    fma.rn.f32 %t10, %x, 0f3FB8AA3B, %t8;
    fma.rn.f32 %t12, %x, 0f32A57060, %t10;
    mov.b32 %t13, %t6;
    shl.b32 %t14, %t13, 23;
    mov.b32 %t15, %t14;
    ex2.approx.ftz.f32 %t16, %t12;
    mul.f32 %y, %t16, %t15;
""")

TANHF = Idiom("tanhf", "tanh", ".f32", "nvcc.tanhf", ptx="""
    abs.f32 %t0, %x;
    mul.f32 %t1, %t0, 0f4038AA3B;
    ex2.approx.ftz.f32 %t2, %t1;
    add.f32 %t3, %t2, 0f3F800000;
    rcp.approx.ftz.f32 %t5, %t3;
    fma.rn.f32 %t7, %t5, 0fC0000000, 0f3F800000;
    setp.ge.f32 %t8, %t0, 0f41102CB4;
    selp.f32 %t9, 0f3F800000, %t7, %t8;
    copysign.f32 %t10, %x, %t9;
    mul.f32 %t11, %x, %x;
    fma.rn.f32 %t14, 0f3C80F082, %t11, 0fBD563CAE;
    fma.rn.f32 %t16, %t14, %t11, 0f3E085941;
    fma.rn.f32 %t18, %t16, %t11, 0fBEAAA9ED;
    fma.rn.f32 %t20, %t18, %t11, 0f00000000;
    fma.rn.f32 %t21, %t20, %x, %x;
    setp.ge.f32 %t22, %t0, 0f3F19999A;
    selp.f32 %y, %t10, %t21, %t22;
""")

LOGF = Idiom("logf", "log", ".f32", "nvcc.logf", ptx="""
    setp.lt.f32 %t0, %x, 0f00800000;
    mul.f32 %t1, %x, 0f4B000000;
    selp.f32 %t2, %t1, %x, %t0;
    selp.f32 %t3, 0fC1B80000, 0f00000000, %t0;
    mov.b32 %t4, %t2;
    add.s32 %t5, %t4, -1059760811;
    and.b32 %t6, %t5, -8388608;
    sub.s32 %t7, %t4, %t6;
    mov.b32 %t8, %t7;
    cvt.rn.f32.s32 %t9, %t6;
    fma.rn.f32 %t11, %t9, 0f34000000, %t3;
    add.f32 %t12, %t8, 0fBF800000;
    fma.rn.f32 %t15, 0fBE055027, %t12, 0f3E1039F6;
    fma.rn.f32 %t17, %t15, %t12, 0fBDF8CDCC;
    fma.rn.f32 %t19, %t17, %t12, 0f3E0F2955;
    fma.rn.f32 %t21, %t19, %t12, 0fBE2AD8B9;
    fma.rn.f32 %t23, %t21, %t12, 0f3E4CED0B;
    fma.rn.f32 %t25, %t23, %t12, 0fBE7FFF22;
    fma.rn.f32 %t27, %t25, %t12, 0f3EAAAA78;
    fma.rn.f32 %t29, %t27, %t12, 0fBF000000;
    mul.f32 %t30, %t12, %t29;
    fma.rn.f32 %t31, %t30, %t12, %t12;
    fma.rn.f32 %t33, %t11, 0f3F317218, %t31;
    setp.lt.u32 %t34, %t4, 2139095040;
    @%t34 bra $I0;
    fma.rn.f32 %t33, %t2, 0f7F800000, 0f7F800000;
$I0:
    setp.eq.f32 %t36, %t2, 0f00000000;
    selp.f32 %y, 0fFF800000, %t33, %t36;
""")

ERFF = Idiom("erff", "erf", ".f32", "nvcc.erff", ptx="""
    abs.f32 %t0, %x;
    setp.ltu.f32 %t1, %t0, 0f3F8060FE;
    setp.ge.f32 %t2, %t0, 0f3F8060FE;
    mul.f32 %t3, %x, %x;
    selp.f32 %t4, %t0, %t3, %t2;
    selp.f32 %t5, 0f38EB4C3A, 0f38B1E96A, %t2;
    selp.f32 %t6, 0fBAAE005B, 0fBA574D20, %t2;
    fma.rn.f32 %t7, %t5, %t4, %t6;
    selp.f32 %t8, 0f3C09919F, 0f3BAAD5EA, %t2;
    fma.rn.f32 %t9, %t7, %t4, %t8;
    selp.f32 %t10, 0fBD24D99A, 0fBCDC1BE7, %t2;
    fma.rn.f32 %t11, %t9, %t4, %t10;
    selp.f32 %t12, 0f3E235519, 0f3DE718AF, %t2;
    fma.rn.f32 %t13, %t11, %t4, %t12;
    selp.f32 %t14, 0f3F69B4F9, 0fBEC093AC, %t2;
    fma.rn.f32 %t15, %t13, %t4, %t14;
    selp.f32 %t16, 0f3F210A14, 0f3E0375D3, %t2;
    fma.rn.f32 %t17, %t15, %t4, %t16;
    neg.f32 %t18, %t0;
    selp.f32 %t19, %t18, %x, %t2;
    fma.rn.f32 %y, %t17, %t19, %t19;
    @%t1 bra $I0;
    ex2.approx.ftz.f32 %t20, %y;
    sub.f32 %t22, 0f3F800000, %t20;
    copysign.f32 %y, %x, %t22;
$I0:
""")

EXP_F64 = Idiom("exp", "exp", ".f64", "nvcc.exp", ptx="""
    fma.rn.f64 %t2, %x, 0d3FF71547652B82FE, 0d4338000000000000;
    mov.b64 {%t3, %u0}, %t2;
    add.rn.f64 %t5, %t2, 0dC338000000000000;
    fma.rn.f64 %t7, %t5, 0dBFE62E42FEFA39EF, %x;
    fma.rn.f64 %t9, %t5, 0dBC7ABC9E3B39803F, %t7;
    fma.rn.f64 %t12, 0d3E5ADE1569CE2BDF, %t9, 0d3E928AF3FCA213EA;
    fma.rn.f64 %t14, %t12, %t9, 0d3EC71DEE62401315;
    fma.rn.f64 %t16, %t14, %t9, 0d3EFA01997C89EB71;
    fma.rn.f64 %t18, %t16, %t9, 0d3F2A01A014761F65;
    fma.rn.f64 %t20, %t18, %t9, 0d3F56C16C1852B7AF;
    fma.rn.f64 %t22, %t20, %t9, 0d3F81111111122322;
    fma.rn.f64 %t24, %t22, %t9, 0d3FA55555555502A1;
    fma.rn.f64 %t26, %t24, %t9, 0d3FC5555555555511;
    fma.rn.f64 %t28, %t26, %t9, 0d3FE000000000000B;
    fma.rn.f64 %t30, %t28, %t9, 0d3FF0000000000000;
    fma.rn.f64 %t31, %t30, %t9, 0d3FF0000000000000;
    mov.b64 {%t32, %u1}, %t31;
    mov.b64 {%u2, %t33}, %t31;
    shl.b32 %t34, %t3, 20;
    add.s32 %t35, %t33, %t34;
    mov.b64 %y, {%t32, %t35};
    mov.b64 {%u3, %t36}, %x;
    mov.b32 %t37, %t36;
    abs.f32 %t38, %t37;
    setp.lt.f32 %t39, %t38, 0f4086232B;
    @%t39 bra $I0;
    setp.lt.f64 %t40, %x, 0d0000000000000000;
    add.f64 %t41, %x, 0d7FF0000000000000;
    selp.f64 %y, 0d0000000000000000, %t41, %t40;
    setp.geu.f32 %t42, %t38, 0f40874800;
    @%t42 bra $I0;
    shr.u32 %t43, %t3, 31;
    add.s32 %t44, %t3, %t43;
    shr.s32 %t45, %t44, 1;
    shl.b32 %t46, %t45, 20;
    add.s32 %t47, %t33, %t46;
    mov.b64 %t48, {%t32, %t47};
    sub.s32 %t49, %t3, %t45;
    shl.b32 %t50, %t49, 20;
    add.s32 %t51, %t50, 1072693248;
    mov.u32 %t52, 0;
    mov.b64 %t53, {%t52, %t51};
    mul.f64 %y, %t48, %t53;
$I0:
""")

TANH_F64 = Idiom("tanh", "tanh", ".f64", "nvcc.tanh", ptx="""
    mov.b64 {%u0, %t0}, %x;
    and.b32 %t1, %t0, 2147483647;
    mov.b64 {%t2, %u1}, %x;
    mov.b64 %t3, {%t2, %t1};
    setp.ltu.f64 %t4, %t3, 0d3FE4F92224DD2F1A;
    @%t4 bra $I0;
    bra.uni $I1;
$I0:
    mul.f64 %t5, %x, %x;
    fma.rn.f64 %t8, 0dBEF0BC46E2F5E964, %t5, 0d3F14359F420AFC3D;
    fma.rn.f64 %t10, %t8, %t5, 0dBF2DF9F0728C5D84;
    fma.rn.f64 %t12, %t10, %t5, 0d3F4337D1CEC4F033;
    fma.rn.f64 %t14, %t12, %t5, 0dBF57D6E9674335B3;
    fma.rn.f64 %t16, %t14, %t5, 0d3F6D6D000D7AAD3D;
    fma.rn.f64 %t18, %t16, %t5, 0dBF8226E1F3CF1EF5;
    fma.rn.f64 %t20, %t18, %t5, 0d3F9664F47EC0C8CF;
    fma.rn.f64 %t22, %t20, %t5, 0dBFABA1BA1B80AB40;
    fma.rn.f64 %t24, %t22, %t5, 0d3FC111111110FA4A;
    fma.rn.f64 %t26, %t24, %t5, 0dBFD5555555555550;
    fma.rn.f64 %t28, %t26, %t5, 0d0000000000000000;
    fma.rn.f64 %y, %t28, %x, %x;
    bra.uni $I2;
$I1:
    add.f64 %t29, %t3, %t3;
    cvt.rn.f32.f64 %t31, %t29;
    mul.f32 %t32, %t31, 0f3FB8AA3B;
    cvt.rni.f32.f32 %t33, %t32;
    cvt.f64.f32 %t34, %t33;
    neg.f64 %t35, %t34;
    fma.rn.f64 %t37, %t35, 0d3FE62E42FEFA39EF, %t29;
    fma.rn.f64 %t40, 0d3E5AE904A4741B81, %t37, 0d3E928A27F89B6999;
    fma.rn.f64 %t42, %t40, %t37, 0d3EC71DE715FF7E07;
    fma.rn.f64 %t44, %t42, %t37, 0d3EFA019A6B0AC45A;
    fma.rn.f64 %t46, %t44, %t37, 0d3F2A01A017EED94F;
    fma.rn.f64 %t48, %t46, %t37, 0d3F56C16C17F2A71B;
    fma.rn.f64 %t50, %t48, %t37, 0d3F811111111173C4;
    fma.rn.f64 %t52, %t50, %t37, 0d3FA555555555211A;
    fma.rn.f64 %t54, %t52, %t37, 0d3FC5555555555540;
    fma.rn.f64 %t56, %t54, %t37, 0d3FE0000000000005;
    mul.f64 %t57, %t37, %t56;
    fma.rn.f64 %t58, %t57, %t37, %t37;
    ex2.approx.ftz.f32 %t59, %t33;
    cvt.f64.f32 %t60, %t59;
    sub.f64 %t62, 0d3FF0000000000000, %t60;
    neg.f64 %t63, %t58;
    fma.rn.f64 %t64, %t63, %t60, %t62;
    sub.f64 %t65, 0d4000000000000000, %t64;
    rcp.approx.ftz.f64 %t66, %t65;
    neg.f64 %t67, %t65;
    fma.rn.f64 %t68, %t67, %t66, 0d3FF0000000000000;
    fma.rn.f64 %t69, %t68, %t68, %t68;
    fma.rn.f64 %t70, %t69, %t66, %t66;
    neg.f64 %t71, %t70;
    fma.rn.f64 %t72, 0d4000000000000000, %t71, 0d3FF0000000000000;
    setp.gt.u32 %t73, %t1, 1077088193;
    selp.f64 %t74, 0d3FF0000000000000, %t72, %t73;
    copysign.f64 %y, %x, %t74;
$I2:
""")

LOG1PF = Idiom("log1pf", "log1p", ".f32", "nvcc.log1pf", ptx="""
    add.rz.f32 %t1, %x, 0f3F800000;
    mov.b32 %t2, %t1;
    add.s32 %t3, %t2, -1061158912;
    and.b32 %t4, %t3, -8388608;
    mov.b32 %t5, %x;
    sub.s32 %t6, %t5, %t4;
    mov.b32 %t7, %t6;
    sub.s32 %t9, 1082130432, %t4;
    mov.b32 %t10, %t9;
    fma.rn.f32 %t13, 0f3E800000, %t10, 0fBF800000;
    add.f32 %t14, %t13, %t7;
    cvt.rn.f32.s32 %t15, %t4;
    mul.f32 %t16, %t15, 0f34000000;
    fma.rn.f32 %t19, 0fBD39BF78, %t14, 0f3DD80012;
    fma.rn.f32 %t21, %t19, %t14, 0fBE0778E0;
    fma.rn.f32 %t23, %t21, %t14, 0f3E146475;
    fma.rn.f32 %t25, %t23, %t14, 0fBE2A68DD;
    fma.rn.f32 %t27, %t25, %t14, 0f3E4CAF9E;
    fma.rn.f32 %t29, %t27, %t14, 0fBE800042;
    fma.rn.f32 %t31, %t29, %t14, 0f3EAAAAE6;
    fma.rn.f32 %t33, %t31, %t14, 0fBF000000;
    mul.f32 %t34, %t14, %t33;
    fma.rn.f32 %t35, %t34, %t14, %t14;
    fma.rn.f32 %y, %t16, 0f3F317218, %t35;
    setp.lt.u32 %t37, %t5, 2139095040;
    @%t37 bra $I1;
    setp.lt.s32 %t38, %t5, -1082130431;
    @%t38 bra $I0;
    fma.rn.f32 %y, %x, 0f7F800000, 0f7F800000;
$I0:
    setp.eq.f32 %t40, %x, 0f00000000;
    selp.f32 %y, 0f80000000, %y, %t40;
$I1:
""")

EXPM1F = Idiom("expm1f", "expm1", ".f32", "nvcc.expm1f", ptx="""
    mul.f32 %t0, %x, 0f3FB8AA3B;
    cvt.rni.f32.f32 %t1, %t0;
    abs.f32 %t2, %x;
    setp.lt.f32 %t3, %t2, 0f3ED1EB85;
    selp.f32 %t4, 0f00000000, %t1, %t3;
    neg.f32 %t5, %t4;
    fma.rn.f32 %t7, %t5, 0f3F317200, %x;
    fma.rn.f32 %t9, %t5, 0f35BFBE8E, %t7;
    setp.eq.f32 %t10, %t4, 0f43000000;
    add.f32 %t11, %t4, 0fBF800000;
    selp.f32 %t12, %t11, %t4, %t10;
    fma.rn.f32 %t15, 0f3AB5EBE6, %t9, 0f3C095663;
    fma.rn.f32 %t17, %t15, %t9, 0f3D2AABE3;
    fma.rn.f32 %t19, %t17, %t9, 0f3E2AA9F6;
    fma.rn.f32 %t21, %t19, %t9, 0f3EFFFFFE;
    mul.f32 %t22, %t9, %t21;
    fma.rn.f32 %t23, %t22, %t9, %t9;
    ex2.approx.f32 %t24, %t12;
    add.f32 %t25, %t24, 0fBF800000;
    fma.rn.f32 %t26, %t23, %t24, %t25;
    add.f32 %t27, %t26, %t26;
    selp.f32 %t28, %t27, %t26, %t10;
    setp.gt.f32 %t29, %t12, 0f43000000;
    selp.f32 %t30, 0f7F800000, %t28, %t29;
    setp.lt.f32 %t31, %t12, 0fC1C80000;
    selp.f32 %t32, 0fBF800000, %t30, %t31;
    setp.eq.f32 %t33, %x, 0f00000000;
    add.f32 %t34, %x, %x;
    selp.f32 %y, %t34, %t32, %t33;
""")

# coshf and sinhf share their first 24 instructions: e^|x| / 2 + 1 / (8 · (e^|x| / 4)) from one scaled exp2
_HALF_EXP_ABS = """
    abs.f32 %t0, %x;
    mul.rn.f32 %t2, %t0, 0f3FB8AA3B;
    cvt.rzi.f32.f32 %t3, %t2;
    abs.f32 %t4, %t3;
    setp.gt.f32 %t5, %t4, 0f42FC0000;
    copysign.f32 %t7, %t3, 0f42FC0000;
    selp.f32 %t8, %t7, %t3, %t5;
    fma.rn.f32 %t10, %t8, 0fBF317218, %t0;
    fma.rn.f32 %t12, %t8, 0f3102E308, %t10;
    mul.f32 %t13, %t12, 0f3FB8AA3B;
    add.f32 %t14, %t8, 0f4B40007D;
    mov.b32 %t15, %t14;
    shl.b32 %t16, %t15, 23;
    mov.b32 %t17, %t16;
    ex2.approx.ftz.f32 %t18, %t13;
    mul.f32 %t19, %t18, %t17;
"""

COSHF = Idiom("coshf", "cosh", ".f32", "nvcc.coshf", ptx=_HALF_EXP_ABS + """
    div.approx.ftz.f32 %t21, 0f3E000000, %t19;
    fma.rn.f32 %y, 0f40000000, %t19, %t21;
""")

SINHF = Idiom("sinhf", "sinh", ".f32", "nvcc.sinhf", ptx=_HALF_EXP_ABS + """
    div.approx.ftz.f32 %t21, 0fBE000000, %t19;
    fma.rn.f32 %t23, 0f40000000, %t19, %t21;
    mul.f32 %t24, %x, %x;
    fma.rn.f32 %t27, 0f363D0ADA, %t24, 0f394FFF49;
    fma.rn.f32 %t29, %t27, %t24, 0f3C08889A;
    fma.rn.f32 %t31, %t29, %t24, 0f3E2AAAAB;
    mul.f32 %t32, %t24, %t31;
    fma.rn.f32 %t33, %t32, %x, %x;
    setp.ge.f32 %t34, %t0, 0f3F800000;
    copysign.f32 %t35, %x, %t23;
    selp.f32 %y, %t35, %t33, %t34;
""")

# The libdevice functions Triton 3.9 links for `libdevice.exp`/`tanh`/`erf` (and `tl.math.erf`), as its LLVM
# compiles them for sm_90 (`triton.compile`, GPUTarget("cuda", 90, 32)): nvcc's algorithms with flush-to-zero
# arithmetic, the sign copied by bit operations on the float register instead of `copysign`, erf's two
# polynomials chosen by a branch instead of selp. (`libdevice.rsqrt` and `tl.math.rsqrt` compile to
# rsqrt.approx.ftz.f32 and `tl.exp` to ex2.approx of x·log2 e: instructions with axioms of their own.)
LIBDEVICE_EXPF = Idiom("libdevice_expf", "exp", ".f32", "libdevice.expf", fusable=True, ptx="""
    fma.rn.ftz.f32 %t2, %x, 0f3BBB989D, 0f3F000000;
    cvt.ftz.sat.f32.f32 %t3, %t2;
    fma.rm.ftz.f32 %t6, %t3, 0f437C0000, 0f4B400001;
    add.f32 %t7, %t6, 0fCB40007F;
    neg.f32 %t8, %t7;
    fma.rn.ftz.f32 %t10, %x, 0f3FB8AA3B, %t8;
    fma.rn.ftz.f32 %t12, %x, 0f32A57060, %t10;
    shl.b32 %t14, %t6, 23;
    ex2.approx.ftz.f32 %t16, %t12;
    mul.f32 %y, %t16, %t14;
""")

LIBDEVICE_TANHF = Idiom("libdevice_tanhf", "tanh", ".f32", "libdevice.tanhf", ptx="""
    abs.ftz.f32 %t0, %x;
    mul.f32 %t1, %t0, 0f4038AA3B;
    ex2.approx.ftz.f32 %t2, %t1;
    add.f32 %t3, %t2, 0f3F800000;
    rcp.approx.ftz.f32 %t5, %t3;
    fma.rn.ftz.f32 %t7, %t5, 0fC0000000, 0f3F800000;
    setp.ge.f32 %t8, %t0, 0f41102CB4;
    selp.b32 %t9, 1065353216, %t7, %t8;
    and.b32 %t10, %x, -2147483648;
    or.b32 %t11, %t9, %t10;
    mul.f32 %t12, %x, %x;
    fma.rn.ftz.f32 %t14, 0f3C80F082, %t12, 0fBD563CAE;
    fma.rn.ftz.f32 %t16, %t14, %t12, 0f3E085941;
    fma.rn.ftz.f32 %t18, %t16, %t12, 0fBEAAA9ED;
    fma.rn.ftz.f32 %t20, %t18, %t12, 0f00000000;
    fma.rn.ftz.f32 %t21, %t20, %x, %x;
    setp.ge.f32 %t22, %t0, 0f3F19999A;
    selp.b32 %y, %t11, %t21, %t22;
""")

LIBDEVICE_ERFF = Idiom("libdevice_erff", "erf", ".f32", "libdevice.erff", ptx="""
    abs.ftz.f32 %t0, %x;
    setp.ge.f32 %t1, %t0, 0f3F8060FE;
    mov.b32 %t2, 0f38EB4C3A;
    mov.b32 %t3, 0fBAAE005B;
    mov.b32 %t4, 0f3C09919F;
    mov.b32 %t5, 0fBD24D99A;
    mov.b32 %t6, 0f3E235519;
    mov.b32 %t7, 0f3F69B4F9;
    mov.b32 %t8, 0f3F210A14;
    @%t1 bra $I0;
    mul.f32 %t0, %x, %x;
    mov.b32 %t2, 0f38B1E96A;
    mov.b32 %t3, 0fBA574D20;
    mov.b32 %t4, 0f3BAAD5EA;
    mov.b32 %t5, 0fBCDC1BE7;
    mov.b32 %t6, 0f3DE718AF;
    mov.b32 %t7, 0fBEC093AC;
    mov.b32 %t8, 0f3E0375D3;
$I0:
    fma.rn.ftz.f32 %t9, %t2, %t0, %t3;
    fma.rn.ftz.f32 %t10, %t9, %t0, %t4;
    fma.rn.ftz.f32 %t11, %t10, %t0, %t5;
    fma.rn.ftz.f32 %t12, %t11, %t0, %t6;
    fma.rn.ftz.f32 %t13, %t12, %t0, %t7;
    fma.rn.ftz.f32 %t14, %t13, %t0, %t8;
    neg.f32 %t15, %t0;
    selp.f32 %t16, %t15, %x, %t1;
    fma.rn.ftz.f32 %y, %t14, %t16, %t16;
    @!%t1 bra $I1;
    ex2.approx.ftz.f32 %t17, %y;
    sub.f32 %t18, 0f3F800000, %t17;
    and.b32 %t19, %x, -2147483648;
    or.b32 %y, %t19, %t18;
$I1:
""")

IDIOMS: tuple[Idiom, ...] = (EXPF, TANHF, LOGF, ERFF, EXP_F64, TANH_F64, LOG1PF, EXPM1F, COSHF, SINHF,
                             LIBDEVICE_EXPF, LIBDEVICE_TANHF, LIBDEVICE_ERFF)

BY_NAME: dict[str, Idiom] = {i.name: i for i in IDIOMS}


