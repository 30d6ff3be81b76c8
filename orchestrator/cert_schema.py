"""The JSON of certificates and witnesses (DESIGN §7), as pydantic models.

These models are the single definition of the format: `lark verify` writes through them, `lark check`
reads through them (an unknown field, a missing one or a wrong version is rejected before anything runs),
and `docs/certificate.schema.json` is generated from them (`json_schema()`, kept in sync by a test).
Bump a document's entry of `VERSIONS` whenever the meaning of one of its fields changes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError
from typing_extensions import TypeAliasType

CERTIFICATE, WITNESS = "lark.certificate", "lark.witness"
VERSIONS = {CERTIFICATE: 2, WITNESS: 1}   # bumped when a field's meaning changes
# Certificate versions that held hints and obligations, not the proof: `lark check` refuses them by name.
PROOFLESS_VERSIONS = (1,)
SOLVERS = {"z3": ("z3",), "cvc5": ("cvc5",), "both": ("z3", "cvc5")}   # `lark check --solver`: who re-proves
Sha256 = str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Kernel(_Strict):
    source: str = Field(description="kernel source file, relative to the manifest")
    language: str
    entry: str
    arch: str
    sha256: Sha256 = Field(description="SHA-256 of the kernel source text")
    ptx_sha256: Sha256 = Field(description="SHA-256 of the PTX the frontend produced from it")


class Reference(_Strict):
    source: str = Field(description="reference file, relative to the manifest")
    sha256: Sha256 = Field(description="SHA-256 of the reference file's text")
    graph_hash: Sha256 = Field(description="the captured core-ATen graph's content hash (RefGraph.graph_hash)")
    inputs: list[str]
    outputs: list[str]
    parameters: dict[str, str]


class Launch(_Strict):
    grid: list[int]
    block: list[int]
    dynamic_shared_bytes: int


class Binding(_Strict):
    dtype: str
    numel: int
    role: str = Field(description="input | output | scratch | opaque")
    init: str | None = Field(description="precondition on the initial contents: zeros, ones, or none")


class Task(_Strict):
    """What the proof is about. `lark check` recomputes this from the manifest and compares field by field."""

    name: str
    kernel: Kernel
    reference: Reference
    launch: Launch
    args: list[str | int | float] = Field(description="launch.args: kernel parameters in order")
    buffers: dict[str, Binding]
    scalars: dict[str, str] = Field(description="scalar reference inputs: name -> float | int")


class Axioms(_Strict):
    table_version: str = Field(description="semantics.axioms.AXIOM_TABLE_VERSION")
    used: list[str] = Field(description="names of the axioms the semantics applied, sorted")


class TableTerm(_Strict):
    """A z3 term as SMT-LIB: its sort and its s-expression, its free symbols declared in the table's
    declarations (`orchestrator.cert_terms`: some numerals are written as declared constants)."""

    sort: str
    sexpr: str


class Term(TableTerm):
    """A z3 term with the declarations of its own free symbols."""

    declarations: list[str]


# An accepted prover hint, as the semantics keeps it (Report.hints): one term (a loop's exit iteration, a
# reindexing), a map of variable name -> term (the writer of output element `e`), or a list of terms (the
# quotient and remainder of an index division).
Hint = Term | list[Term] | dict[str, Term]


class NodeRef(_Strict):
    """An earlier node of the proof: the theorem it made is the input."""

    node: int = Field(ge=0)


class TermRef(_Strict):
    """A term of the proof's term table."""

    term: int = Field(ge=0)


# A rule's input: a number, a string, a flag, nothing, an earlier theorem, a term, or a tuple of inputs.
Value = TypeAliasType("Value", "StrictBool | StrictInt | StrictStr | None | NodeRef | TermRef | list[Value]")


class NodeObligation(_Strict):
    """An obligation the node's rule discharged when the certificate was written (replay asks it again)."""

    name: str
    sha256: Sha256 = Field(description="SHA-256 of its text (`orchestrator.cert_terms.obligation_text`)")
    backend: str = Field(description="the checker that proved it when the certificate was written")


class Node(_Strict):
    """One application of a kernel rule (`semantics.proof.rules`, `sums`, `indices`)."""

    rule: str
    inputs: dict[str, Value] = Field(description="the rule's inputs by parameter name (not the checker)")
    obligations: list[NodeObligation] = Field(description="what the rule discharged itself, for reference")


class ProofGoal(_Strict):
    property: str
    goal: str = Field(description="the goal's name, as `lark verify --show goals` lists it")
    node: int = Field(ge=0, description="the node whose theorem states the goal")


class Proof(_Strict):
    """The DAG of rule applications, earlier nodes first; terms in SMT-LIB, one declarations table."""

    declarations: list[str] = Field(description="declare-fun of every free symbol of the terms")
    terms: list[TableTerm]
    nodes: list[Node]
    goals: list[ProofGoal] = Field(description="for each top goal, the node whose theorem states it")
    facts: list[int] = Field(description="nodes whose theorems state the side conditions the goals' derivation "
                                         "rests on (loop exits and bounds, shared-memory writers, supersession, "
                                         "defined registers, ...)")


class Solving(_Strict):
    """How the obligations were solved when the certificate was written (STYLE 9): each in a fresh z3
    context with this seed and work limit, cvc5 with its seed. `lark check` re-proves with the same."""

    z3_seed: int
    z3_rlimit: int = Field(description="z3's `rlimit`: the work limit, the same on every machine")
    cvc5_seed: int


class Finding(_Strict):
    property: str
    message: str
    witness: dict


class _Document(_Strict):
    manifest: str = Field(description="the task's lark.toml, relative to this file or absolute")
    task: Task
    kernel_source_text: str = Field(description="the kernel source itself; its SHA-256 is task.kernel.sha256")
    axioms: Axioms
    hints: dict[str, Hint] = Field(description="the accepted prover hints, by the key the semantics asked with")


# A hint of a certificate: its terms in the proof's term table.
TableHint = TermRef | list[TermRef] | dict[str, TermRef]


class Certificate(_Document):
    """A proof that the task is verified: the hints its goals were derived with, and the proof."""

    hints: dict[str, TableHint] = Field(description="the accepted prover hints, by the key the semantics asked "
                                                    "with; their terms are in proof.terms")
    schema_name: Literal["lark.certificate"] = Field(CERTIFICATE, alias="schema")
    version: Literal[2] = Field(description="format version; bumped when a field's meaning changes")
    properties: dict[str, Literal["proved", "not_applicable"]] = Field(
        description="property -> proved, or not_applicable: equivalence of a safety-only task (no [reference]: "
                    "not asked for), memory safety when every access is to an unbounded buffer; a certificate "
                    "of a safety-only task proves the other four properties")
    proof: Proof
    solving: Solving


class Witness(_Document):
    """A refutation: the findings with their concrete witnesses, for `lark check` to replay."""

    schema_name: Literal["lark.witness"] = Field(WITNESS, alias="schema")
    version: Literal[1] = Field(description="format version; bumped when a field's meaning changes")
    findings: list[Finding]


class BadDocument(Exception):
    """The file is not a certificate or witness this version of LARK reads."""


def load(path: Path) -> Certificate | Witness:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadDocument(f"cannot read {path}: {exc}") from None
    kinds = {CERTIFICATE: Certificate, WITNESS: Witness}
    kind = data.get("schema") if isinstance(data, dict) else None
    if kind not in kinds:
        raise BadDocument(f"{path}: 'schema' must be one of {sorted(kinds)}, not {kind!r}")
    if kind == CERTIFICATE and data.get("version") in PROOFLESS_VERSIONS:
        raise BadDocument(f"{path}: certificate version {data['version']} holds hints and obligations, not the "
                          f"proof; this LARK checks a certificate by replaying its proof through the kernel "
                          f"(version {VERSIONS[kind]}): run `lark verify --certificate` again")
    if data.get("version") != VERSIONS[kind]:
        raise BadDocument(f"{path}: {kind} version {data.get('version')!r}; this LARK reads version "
                          f"{VERSIONS[kind]}")
    try:
        return kinds[kind].model_validate(data)
    except ValidationError as exc:
        raise BadDocument(f"{path}: not a valid {kind}: {exc}") from None


def dump(document: Certificate | Witness, path: Path) -> None:
    data = document.model_dump(by_alias=True)
    data = {"schema": data.pop("schema"), **data}
    Path(path).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def json_schema() -> dict:
    """The JSON Schema of both documents (what docs/certificate.schema.json holds)."""
    certificate = Certificate.model_json_schema(by_alias=True)
    witness = Witness.model_json_schema(by_alias=True)
    defs = {**certificate.pop("$defs"), **witness.pop("$defs")}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "LARK certificate or witness",
            "oneOf": [{"$ref": "#/$defs/Certificate"}, {"$ref": "#/$defs/Witness"}],
            "$defs": {**defs, "Certificate": certificate, "Witness": witness}}
