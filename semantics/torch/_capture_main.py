"""The capture subprocess: `python -m semantics.torch._capture_main --writable DIR [--timeout S] SRC..`.

It enters the sandbox (sandbox.py) first, while it still has one thread and before torch is imported, so
that torch, the worker and every reference run inside it; then it runs `_capture_worker.main`. A
mechanism the kernel lacks is reported on stderr as a line starting "lark: sandbox:", which `capture.py`
passes on to its own stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from semantics.torch.sandbox import enter


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--writable", type=Path, required=True)
    known, _ = parser.parse_known_args()
    for warning in enter(known.writable):
        print(f"lark: sandbox: {warning}", file=sys.stderr, flush=True)
    from semantics.torch._capture_worker import main as worker_main  # torch is imported only now
    worker_main(sys.argv[1:])


if __name__ == "__main__":
    main()
