"""The proof kernel: the only code that makes a `Theorem` (docs/trusted_base.md).

Code outside the kernel imports the type, the refusals, the recorded `Step` of a theorem and `replay` (apply a
step's rule again) from here, and the rules from `rules`, `sums` and `indices`; the minting door
(`theorem._mint`) stays inside: an import contract in pyproject.toml forbids importing
`semantics.proof.theorem` from anywhere else.
"""

from semantics.proof.theorem import RULES, Forged, Refused, Step, Theorem, replay  # noqa: I001 (before the rules)
from semantics.proof import exps, indices, rules, sums, unions  # noqa: F401, E402 (every rule registered for `replay`)

__all__ = ["RULES", "Forged", "Refused", "Step", "Theorem", "replay"]
