"""LARK's trusted semantics. Importing the package first drops z3's error check after its pure accessors
(`z3_accessors`): every process that verifies or checks imports this package before it walks a term."""

from semantics import z3_accessors as _z3_accessors  # noqa: F401
