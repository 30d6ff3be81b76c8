"""The proof kernel: the only code that makes a `Theorem` (docs/trusted_base.md)."""
