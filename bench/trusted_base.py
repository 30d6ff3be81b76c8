"""Regenerate the file table of docs/trusted_base.md: every source file under semantics/ and lean_pool/, its
line count, its role (trusted: what a `verified` rests on; refutation: what only a `refuted` rests on besides;
tactic: proof search, untrusted) and what it is trusted for.

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
# trusted: what a `verified` rests on (`lark check` imports exactly these, and the kernel); refutation: what a
# `refuted` rests on besides them (the independent concrete check of a witness); tactic: proof search, untrusted
TRUSTED, REFUTATION, TACTIC = "trusted", "refutation", "tactic"
ROLES = (TRUSTED, REFUTATION, TACTIC)

# (path or folder prefix, role, what it is trusted for): the first matching row classifies a file.
GROUPS: list[tuple[str, str, str]] = [
    ("semantics/proof/", TRUSTED, "the proof kernel: the only code that makes a Theorem"),
    ("semantics/derive.py", TRUSTED, "the decision core of verify and check: derivation, side conditions, goals"),
    ("semantics/goals.py", TRUSTED, "the top goals and how theorems meet them (established)"),
    ("semantics/checkers.py", TRUSTED, "side conditions through the kernel (verify) or by replayed theorems (check)"),
    ("semantics/canonical.py", TRUSTED, "normal forms of resolved shared values (each rewrite an identity)"),
    ("semantics/properties/shared_values.py", TRUSTED, "what a shared read sees: its proved last writer's value"),
    ("semantics/properties/loop_shared.py", TRUSTED, "what a shared read in a loop sees: its iteration's writer"),
    ("semantics/properties/superseded.py", TRUSTED, "lanes proved overwritten later, left out of the goals"),
    ("semantics/properties/readbacks.py", TRUSTED, "what an output read back sees: the thread's own proved store"),
    ("semantics/properties/equivalence.py", TACTIC, "the equivalence lanes' proof search and counterexamples"),
    ("semantics/properties/race_search.py", TACTIC, "race freedom's proof search (quick query, slabs, warps)"),
    ("semantics/properties/arg_reductions.py", TACTIC, "arg-extremum folds matched (the matcher's step)"),
    ("semantics/verdict.py", TACTIC, "verify's driver: hands the tactics to the core, confirms refutations"),
    ("semantics/properties/reductions.py", TACTIC, "the comprehension matcher"),
    ("semantics/properties/nested_sums.py", TACTIC, "nested Sums matched by congruence (the matcher's nesting step)"),
    ("semantics/properties/fold.py", TACTIC, "folding unrolled terms into families"),
    ("semantics/properties/unions.py", TACTIC, "the union finder"),
    ("semantics/properties/tiles.py", TACTIC, "tiling by progressions (the matcher's counting step)"),
    ("semantics/properties/prefix.py", TACTIC, "the prefix peel (scans)"),
    ("semantics/properties/padded_tiles.py", TACTIC, "cutting zero tails of padded tiles"),
    ("semantics/properties/padding.py", TACTIC, "cutting masked tails of sums"),
    ("semantics/properties/guarded_sums.py", TACTIC, "guarded sums of accumulations; small windows unrolled"),
    ("semantics/properties/guarded_trees.py", TACTIC, "a loop body's tree of guarded sums, one summand per tap"),
    ("semantics/properties/extremum_windows.py", TACTIC, "a padded max pooling window: the reference's max unrolled"),
    ("semantics/properties/extremum_taps.py", TACTIC, "a padded max pooling lane proved tap by tap"),
    ("semantics/properties/guarded_reads.py", TACTIC, "a window of guarded reads proved read by read"),
    ("semantics/properties/divisions.py", TACTIC, "quotient/remainder rewriting of index divisions"),
    ("semantics/properties/compose.py", TACTIC, "undoing a lane's rewrites by kernel rules (closing it to its goal)"),
    ("semantics/properties/matched_sums.py", TACTIC, "the matcher's Sum pairs restated by reindex_lanes"),
    ("semantics/properties/tiled_unions.py", TACTIC, "the matcher's unions and folds restated by tiled_union"),
    ("semantics/properties/prefix_proofs.py", TACTIC, "the prefix split and peel restated by kernel rules"),
    ("semantics/properties/prefix_guards.py", TACTIC, "an exclusive scan's guard on its empty prefix removed"),
    ("semantics/properties/flat_sums.py", TACTIC, "a reference's nest of Sums flattened (a plain or decoded index)"),
    ("semantics/properties/block_slabs.py", TACTIC, "races across blocks ruled out by per-block slabs (kernel rules)"),
    ("semantics/ptx/exp_monomials.py", TACTIC, "rescaled sums expanded into exp monomials (online softmax's step)"),
    ("semantics/properties/atomic", TRUSTED, "atomic accumulation (verify only: not yet kernel theorems)"),
    ("semantics/properties/", TRUSTED, "the property goals and their obligations (bounds, races, barriers, values)"),
    ("semantics/ptx/", TRUSTED, "PTX semantics: grammar, parser, machine model, instruction table, symbolic execution"),
    ("semantics/torch/", TRUSTED, "ATen semantics and the capture sandbox"),
    ("semantics/concrete/", REFUTATION, "the concrete interpreter that reproduces refutations"),
    ("semantics/replay.py", REFUTATION, "concrete evaluation of witnesses on real numbers (refutations)"),
    ("semantics/sparse.py", REFUTATION, "sparse replay of long comprehensions (refutations)"),
    ("semantics/axioms.py", TRUSTED, "the axiom table (ideal functions and their facts)"),
    ("semantics/preconditions.py", TRUSTED, "value-range preconditions on integer inputs (by_smt's instances)"),
    ("semantics/constants.py", TRUSTED, "reference float32 constants a kernel literal may stand for (float.constant)"),
    ("semantics/comprehension.py", TRUSTED, "the Sum/Prod/Max/Min term constructors and their monoids"),
    ("semantics/tiling.py", TRUSTED, "tiled_union's coverage of a range by progressions (arithmetic, no rule)"),
    ("semantics/arg_extrema.py", TRUSTED, "the ArgMax/ArgMin fold constructors and their concrete meaning"),
    ("semantics/terms.py", TRUSTED, "term traversal"),
    ("semantics/z3_accessors.py", TRUSTED, "z3's pure accessors called without their error check (speed)"),
    ("semantics/purify.py", TRUSTED, "divisions by constants named before solving (equisatisfiable)"),
    ("semantics/radix.py", TRUSTED, "purify's exact divisions and mixed-radix digits of index values"),
    ("semantics/linear.py", TRUSTED, "purify's linear forms of index terms (exact and modulo 2^w) and intervals"),
    ("semantics/guards.py", TRUSTED, "purify's reading of index tests as intervals of one coordinate"),
    ("semantics/", TRUSTED, "support (the bound task and the report, errors, versions, source lines)"),
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
        if rel == prefix or (not prefix.endswith(".py") and rel.startswith(prefix)):
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
    return sorted(found, key=lambda r: (ROLES.index(r[2]), order[r[3]], r[0]))


def render() -> str:
    table = rows()
    out = ["| file | lines | role | trusted for |", "|---|---:|---|---|"]
    out += [f"| `{f}` | {n} | {role} | {what} |" for f, n, role, what in table]
    for role in ROLES:
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
