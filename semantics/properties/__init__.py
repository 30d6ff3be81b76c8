"""The property checkers: each turns kernel effects into obligations and decides findings.

They are trusted code: a property is `proved` only when every obligation it issued is unsat, and
`violated` only with a witness that replays on the semantics (see `replay.py`).
"""
