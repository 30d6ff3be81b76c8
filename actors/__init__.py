"""Ray actor shells around `lean_pool` and the verify pipeline. All of LARK's Ray code lives in this package:
everything else is plain Python, testable without Ray (DESIGN §4, STYLE 5)."""
