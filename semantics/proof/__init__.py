"""The proof kernel: the only code that makes a `Theorem` (docs/trusted_base.md).

Code outside the kernel imports the type and the refusals from here, and the rules from `rules` and `sums`;
the minting door (`theorem._mint`) stays inside: an import contract in pyproject.toml forbids importing
`semantics.proof.theorem` from anywhere else.
"""

from semantics.proof.theorem import Forged, Refused, Theorem

__all__ = ["Forged", "Refused", "Theorem"]
