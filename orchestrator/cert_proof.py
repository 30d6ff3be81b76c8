"""The proof a certificate holds: the DAG of kernel-rule applications, written and replayed.

Writing walks the recorded steps (`semantics.proof.Step`) back from the theorems that state the task's top goals
and from the facts its goals' derivation rests on, premises first; each node is a rule's name and its inputs, a
premise being a reference to an earlier node and a term a reference to the term table (`cert_terms`). Replaying
reads the terms back and applies each node's rule again through the kernel (`semantics.proof.replay`), with a
checker that re-proves every side condition: the theorems that come out are the kernel's, whatever the file
says. Nothing here is trusted: a node that does not fit its rule is refused by the rule, and a goal is met only
by a replayed theorem that states exactly what the semantics derives itself (`semantics.derive`).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from lean_pool.checker import Checker
from orchestrator import cert_schema
from orchestrator.cert_terms import BadTerm, obligation_text, read_terms, write_terms
from semantics.proof import Refused, Step, Theorem, replay

GoalRoot = tuple[str, str, Theorem]   # (property, goal name, the theorem stating it)


@dataclass
class _Writer:
    nodes: list[dict]
    terms: list[z3.ExprRef]
    node_of: dict[int, int]
    term_of: dict[int, int]

    def term(self, t: z3.ExprRef) -> dict:
        if t.get_id() not in self.term_of:
            self.term_of[t.get_id()] = len(self.terms)
            self.terms.append(t)
        return {"term": self.term_of[t.get_id()]}

    def value(self, v: object) -> object:
        if isinstance(v, Theorem):
            return {"node": self.node_of[id(v)]}
        if isinstance(v, z3.ExprRef):
            return self.term(v)
        if isinstance(v, tuple | list):
            return [self.value(x) for x in v]
        if v is None or isinstance(v, bool | int | str):
            return v
        raise BadTerm(f"a rule input of type {type(v).__name__} has no certificate form")

    def add(self, theorem: Theorem) -> None:
        """The theorem's node, after its premises' (an explicit stack: proofs are deep)."""
        stack = [(theorem, False)]
        while stack:
            t, expanded = stack.pop()
            if id(t) in self.node_of:
                continue
            if t.step is None:
                raise BadTerm(f"a theorem of rule {t.rule} has no recorded step")
            premises = t.step.premises()
            if not expanded:
                stack.append((t, True))
                stack.extend((p, False) for p in reversed(premises) if id(p) not in self.node_of)
                continue
            self.node_of[id(t)] = len(self.nodes)
            self.nodes.append({"rule": t.step.rule, "inputs": {k: self.value(v) for k, v in t.step.inputs},
                               "obligations": _own_obligations(t, premises)})


def _own_obligations(theorem: Theorem, inputs: list[Theorem]) -> list[dict]:
    """The obligations the rule discharged itself: its own and those of side conditions it proved inside."""
    given = {id(p) for p in inputs}
    found = list(theorem.own) + [e for p in theorem.premises if id(p) not in given for e in p.evidence]
    return [{"name": ob.name, "sha256": obligation_text(ob)[1], "backend": outcome.backend} for ob, outcome in found]


def proof_to_json(goals: list[GoalRoot], facts: list[Theorem],
                  hints: dict[str, object]) -> tuple[cert_schema.Proof, dict[str, object]]:
    """The certificate's proof (every node the goals' and facts' theorems rest on) and its hints, their terms in
    the proof's table; the terms are read back to be sure they are the same terms (a term that would not come
    back is a BadTerm here, not a rejection later)."""
    writer = _Writer([], [], {}, {})
    for _, _, theorem in goals:
        writer.add(theorem)
    for theorem in facts:
        writer.add(theorem)
    tabled = {key: _hint(writer, hint) for key, hint in sorted(hints.items())}
    declarations, texts = write_terms(writer.terms)
    read = read_terms(declarations, texts)
    lost = [k for k, (a, b) in enumerate(zip(writer.terms, read, strict=True)) if not a.eq(b)]
    if lost:
        raise BadTerm(f"{len(lost)} terms do not read back as written, the first {texts[lost[0]].sexpr[:300]}")
    proof = cert_schema.Proof.model_validate({
        "declarations": declarations, "terms": texts, "nodes": writer.nodes,
        "goals": [{"property": p, "goal": what, "node": writer.node_of[id(t)]} for p, what, t in goals],
        "facts": sorted({writer.node_of[id(t)] for t in facts})})
    return proof, tabled


def _hint(writer: _Writer, hint: object) -> object:
    """A hint as references into the term table: one term, a tuple of terms, or a map of names to terms."""
    if isinstance(hint, dict):
        return {name: writer.term(t) for name, t in hint.items()}
    if isinstance(hint, tuple):
        return [writer.term(t) for t in hint]
    return writer.term(hint)


def hints_from_table(hints: dict[str, cert_schema.TableHint], terms: list[z3.ExprRef]) -> dict[str, object]:
    """The certificate's hints as the semantics keeps them (`Report.hints`); BadProof for a reference the
    table does not have."""
    def term(ref: cert_schema.TermRef, key: str) -> z3.ExprRef:
        if ref.term >= len(terms):
            raise BadProof(f"hint {key} refers to term {ref.term}, which the table does not have")
        return terms[ref.term]
    out: dict[str, object] = {}
    for key, hint in hints.items():
        if isinstance(hint, dict):
            out[key] = {name: term(ref, key) for name, ref in hint.items()}
        elif isinstance(hint, list):
            out[key] = tuple(term(ref, key) for ref in hint)
        else:
            out[key] = term(hint, key)
    return out


class BadProof(Exception):
    """A node that cannot be replayed; the message names it."""


def _decoded(value: object, terms: list[z3.ExprRef], theorems: list[Theorem], at: int) -> object:
    if isinstance(value, cert_schema.NodeRef):
        if value.node >= at:
            raise BadProof(f"node {at} refers to node {value.node}, which is not an earlier one")
        return theorems[value.node]
    if isinstance(value, cert_schema.TermRef):
        if value.term >= len(terms):
            raise BadProof(f"node {at} refers to term {value.term}, which the table does not have")
        return terms[value.term]
    if isinstance(value, list):
        return tuple(_decoded(v, terms, theorems, at) for v in value)
    return value


def proof_terms(proof: cert_schema.Proof) -> list[z3.ExprRef]:
    """The proof's term table read back; BadProof when it does not parse."""
    try:
        return read_terms(proof.declarations, proof.terms)
    except BadTerm as exc:
        raise BadProof(str(exc)) from None


def replay_proof(proof: cert_schema.Proof, terms: list[z3.ExprRef], checker: Checker,
                 timeout_s: float) -> list[Theorem]:
    """The theorem of every node, each made again by its rule through the kernel, side conditions re-proved by
    `checker`. Raises BadProof naming the first node that does not replay."""
    theorems: list[Theorem] = []
    for n, node in enumerate(proof.nodes):
        inputs = tuple((k, _decoded(v, terms, theorems, n)) for k, v in node.inputs.items())
        try:
            theorems.append(replay(Step(node.rule, inputs), checker, timeout_s))
        except KeyError:
            raise BadProof(f"node {n} applies {node.rule}, which is not a rule of the kernel") from None
        except Refused as refused:
            raise BadProof(f"node {n} ({node.rule}) is refused by the kernel: {' '.join(str(refused).split())}") \
                from None
        except (z3.Z3Exception, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise BadProof(f"node {n} ({node.rule}) does not fit its rule: {exc}") from None
    return theorems
