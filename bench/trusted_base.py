"""Regenerate the file table of docs/trusted_base.md: every source file under semantics/ and lean_pool/, its
line count, and what it is trusted for (or that it is a tactic, untrusted in principle but still inside the
wall today: the migration list).

    python bench/trusted_base.py            # print the table and the totals
    python bench/trusted_base.py --write    # rewrite the table in docs/trusted_base.md

tests/test_trusted_base.py keeps the written counts true (within the tolerance the document states) and
fails on a file the table does not list; a new file gets a row here (GROUPS) first.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "trusted_base.md"
BEGIN, END = "<!-- table:begin (bench/trusted_base.py) -->", "<!-- table:end -->"
TRUSTED, TACTIC = "trusted", "tactic"

# (path or folder prefix, role, what it is trusted for): the first matching row classifies a file.
GROUPS: list[tuple[str, str, str]] = [
    ("semantics/proof/", TRUSTED, "the proof kernel: the only code that makes a Theorem"),
    ("semantics/canonical.py", TACTIC, "normal forms of sums and max/min trees (AC identities)"),
    ("semantics/properties/reductions.py", TACTIC, "the comprehension matcher"),
    ("semantics/properties/nested_sums.py", TACTIC, "nested Sums matched by congruence (the matcher's nesting step)"),
    ("semantics/properties/fold.py", TACTIC, "folding unrolled terms into families"),
    ("semantics/properties/unions.py", TACTIC, "the union finder"),
    ("semantics/properties/tiles.py", TACTIC, "tiling by progressions (the matcher's counting step)"),
    ("semantics/properties/prefix.py", TACTIC, "the prefix peel (scans)"),
    ("semantics/properties/padded_tiles.py", TACTIC, "cutting zero tails of padded tiles"),
    ("semantics/properties/padding.py", TACTIC, "cutting masked tails of sums"),
    ("semantics/properties/guarded_sums.py", TACTIC, "guarded sums of accumulations; small windows unrolled"),
    ("semantics/properties/guarded_reads.py", TACTIC, "a window of guarded reads proved read by read"),
    ("semantics/properties/divisions.py", TACTIC, "quotient/remainder rewriting of index divisions"),
    ("semantics/properties/compose.py", TACTIC, "undoing a lane's rewrites by kernel rules (closing it to its goal)"),
    ("semantics/properties/matched_sums.py", TACTIC, "the matcher's Sum pairs restated by reindex_lanes"),
    ("semantics/properties/prefix_proofs.py", TACTIC, "the prefix split and peel restated by kernel rules"),
    ("semantics/properties/prefix_guards.py", TACTIC, "an exclusive scan's guard on its empty prefix removed"),
    ("semantics/properties/shared_values.py", TACTIC, "the shared-value resolver (last writer)"),
    ("semantics/properties/loop_shared.py", TACTIC, "the shared-value resolver inside loops"),
    ("semantics/properties/readbacks.py", TACTIC, "the own-writer resolver of outputs read back"),
    ("semantics/properties/superseded.py", TACTIC, "finding stores overwritten later"),
    ("semantics/properties/block_slabs.py", TACTIC, "races across blocks ruled out by per-block slabs (kernel rules)"),
    ("semantics/ptx/exp_monomials.py", TACTIC, "rescaled sums expanded into exp monomials (online softmax's step)"),
    ("semantics/properties/", TRUSTED, "the property goals and their obligations (bounds, races, barriers, values)"),
    ("semantics/verdict.py", TRUSTED, "the verdict: checks the theorems against the top goals"),
    ("semantics/ptx/", TRUSTED, "PTX semantics: grammar, parser, machine model, instruction table, symbolic execution"),
    ("semantics/torch/", TRUSTED, "ATen semantics and the capture sandbox"),
    ("semantics/concrete/", TRUSTED, "the concrete interpreter that reproduces refutations"),
    ("semantics/replay.py", TRUSTED, "concrete evaluation of witnesses on real numbers (refutations)"),
    ("semantics/sparse.py", TRUSTED, "sparse replay of long comprehensions (refutations)"),
    ("semantics/axioms.py", TRUSTED, "the axiom table (ideal functions and their facts)"),
    ("semantics/preconditions.py", TRUSTED, "value-range preconditions on integer inputs (by_smt's instances)"),
    ("semantics/constants.py", TRUSTED, "reference float32 constants a kernel literal may stand for (float.constant)"),
    ("semantics/comprehension.py", TRUSTED, "the Sum/Prod/Max/Min term constructors"),
    ("semantics/arg_extrema.py", TRUSTED, "the ArgMax/ArgMin fold constructors and their concrete meaning"),
    ("semantics/terms.py", TRUSTED, "term traversal"),
    ("semantics/purify.py", TRUSTED, "divisions by constants named before solving (equisatisfiable)"),
    ("semantics/radix.py", TRUSTED, "purify's exact divisions and mixed-radix digits of index values"),
    ("semantics/linear.py", TRUSTED, "purify's linear forms of index terms (exact and modulo 2^w) and intervals"),
    ("semantics/guards.py", TRUSTED, "purify's reading of index tests as intervals of one coordinate"),
    ("semantics/", TRUSTED, "support (errors, versions)"),
    ("lean_pool/", TRUSTED, "the checker interface and backends (z3, cvc5), the pool, the lemma cache"),
]
SUFFIXES = (".py", ".lark")


def files() -> list[Path]:
    return sorted(p for top in ("semantics", "lean_pool") for p in (ROOT / top).rglob("*")
                  if p.suffix in SUFFIXES and "__pycache__" not in p.parts)


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def classify(rel: str) -> tuple[str, str]:
    for prefix, role, what in GROUPS:
        if rel == prefix or (prefix.endswith("/") and rel.startswith(prefix)):
            return role, what
    raise KeyError(f"{rel}: no row in GROUPS")


def rows() -> list[tuple[str, int, str, str]]:
    """(file, lines, role, what it is trusted for), trusted files first, grouped as GROUPS lists them."""
    found = []
    for path in files():
        rel = path.relative_to(ROOT).as_posix()
        role, what = classify(rel)
        found.append((rel, lines(path), role, what))
    order = {what: n for n, (_, _, what) in enumerate(GROUPS)}
    return sorted(found, key=lambda r: (r[2] != TRUSTED, order[r[3]], r[0]))


def render() -> str:
    table = rows()
    out = ["| file | lines | role | trusted for |", "|---|---:|---|---|"]
    out += [f"| `{f}` | {n} | {role} | {what} |" for f, n, role, what in table]
    for role in (TRUSTED, TACTIC):
        total = sum(n for _, n, r, _ in table if r == role)
        out.append(f"| **total {role}** | {total} | | |")
    return "\n".join(out)


def write() -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{render()}\n{END}{tail}")


if __name__ == "__main__":
    if "--write" in sys.argv:
        write()
    print(render())
