"""The JSON form of a checker's answer, shared by solver workers, Ray actors and the lemma cache.

An `Outcome` holds Python values (int, Fraction, bool) and, in-process, a z3 model; across a process
boundary only JSON travels. An *answer* is `{"status", "seconds", "model", "reason"}` with the witness
values encoded so that a Fraction survives exactly (a float would not).
"""

from __future__ import annotations

from fractions import Fraction

from lean_pool.checker import UNKNOWN, Outcome


def encode_value(value: object) -> object:
    if isinstance(value, bool | int):
        return value
    if isinstance(value, Fraction):
        return ["q", value.numerator, value.denominator]
    return ["s", str(value)]


def decode_value(value: object) -> object:
    if isinstance(value, list):
        tag, *rest = value
        return Fraction(rest[0], rest[1]) if tag == "q" else rest[0]
    return value


def answer(status: str, seconds: float, model: dict | None = None, reason: str | None = None) -> dict:
    """An answer from witness values already encoded."""
    return {"status": status, "seconds": seconds, "model": model, "reason": reason}


def answer_of(outcome: Outcome) -> dict:
    model = None if outcome.model is None else {k: encode_value(v) for k, v in outcome.model.items()}
    return answer(outcome.status, outcome.seconds, model, outcome.reason)


def outcome_of(answer: dict, backend: str, cached: bool | None = None) -> Outcome:
    model = answer.get("model")
    values = None if model is None else {k: decode_value(v) for k, v in model.items()}
    return Outcome(answer["status"], backend, answer.get("seconds", 0.0), values, answer.get("reason"),
                   cached=cached)


def unknown_answer(reason: str, seconds: float = 0.0) -> dict:
    return answer(UNKNOWN, seconds, reason=reason)
