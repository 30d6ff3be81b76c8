"""Mutants of the project's correct examples, each written as its own task folder.

An example is correct when its EXPECT says `verified`. A mutant folder is a copy of the example's folder
(manifest, reference, anything they import) with the kernel source rewritten by one `Edit`, the manifest's
`name` made unique, and a `MUTANT.json` saying which example, operator, line and diff it came from.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.mutation.operators import OPERATORS, apply, edits
from bench.mutation.text import Source, line_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LANGUAGE_BY_SUFFIX = {".cu": "cuda", ".py": "triton", ".ptx": "ptx"}
NAME_LINE = re.compile(r"^name\s*=.*$", re.M)


@dataclass(frozen=True)
class Mutant:
    """One mutant task: `folder/lark.toml` verifies it; `example` and `operator` say where it came from."""

    name: str
    example: str
    operator: str
    line: int
    diff: str
    folder: Path

    @property
    def manifest(self) -> Path:
        return self.folder / "lark.toml"

    def to_json(self) -> dict:
        return {**asdict(self), "folder": str(self.folder)}


def correct_examples(root: Path = EXAMPLES) -> list[Path]:
    """Example folders whose EXPECT says `verified` (the ones a mutant can break)."""
    return sorted(p.parent for p in root.glob("*/EXPECT") if p.read_text().split()[:1] == ["verified"])


def kernel_source(example: Path) -> Path:
    return example / tomllib.loads((example / "lark.toml").read_text())["kernel"]["source"]


def mutate_example(example: Path, operators: list[str], out: Path) -> list[Mutant]:
    """Write every mutant of `example` under `out` (one folder each) and describe them."""
    kernel = kernel_source(example)
    src = Source(kernel.read_text(), LANGUAGE_BY_SUFFIX[kernel.suffix])
    mutants = []
    for operator in operators:
        for k, edit in enumerate(edits(src, operator)):
            name = f"{example.name}__{operator}__{k}"
            mutated = apply(src.text, edit)
            diff = "".join(difflib.unified_diff(src.text.splitlines(True), mutated.splitlines(True),
                                                f"{example.name}/{kernel.name}", f"{name}/{kernel.name}", n=0))
            folder = out / name
            shutil.copytree(example, folder)
            (folder / kernel.relative_to(example)).write_text(mutated)
            manifest = folder / "lark.toml"
            manifest.write_text(NAME_LINE.sub(f'name = "{name}"', manifest.read_text(), count=1))
            mutant = Mutant(name, example.name, operator, line_of(src.text, edit.start), diff, folder)
            (folder / "MUTANT.json").write_text(json.dumps(mutant.to_json(), indent=2))
            mutants.append(mutant)
    return mutants


def generate(examples: list[Path], operators: list[str] | None, out: Path) -> list[Mutant]:
    chosen = operators or list(OPERATORS)
    unknown = set(chosen) - set(OPERATORS)
    if unknown:
        raise ValueError(f"no such operators {sorted(unknown)}; there are {sorted(OPERATORS)}")
    return [m for example in examples for m in mutate_example(example, chosen, out)]
