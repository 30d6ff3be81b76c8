"""Kernels as libraries write them (issue 16): the verification time of each item's examples — optional
pointers, WARP_SZ block reductions, halving tree loops, running max from -INFINITY, online softmax,
cooperative groups, gathers, 4-D permutes, Triton constexpr strings, outputs read back — correct kernel and
buggy twin. Prints figures; asserts nothing."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from orchestrator.job import run_verify

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ITEMS = {
    "optional pointers (item 1)": ["lib_optional_null", "lib_optional_bound", "lib_optional_missing_null_check"],
    "warpSize / WARP_SZ (item 5)": ["lib_warpsize_block_sum", "lib_warpsize_leader_slot_race"],
    "halving tree loops (item 4)": ["lib_tree_halving_blockdim", "lib_tree_halving_short"],
    "running max from -INFINITY (item 2)": ["lib_running_max_neginf"],
    "online softmax (item 2)": ["lib_online_softmax_rows", "lib_online_softmax_fast", "lib_online_softmax_no_rescale"],
    "cooperative groups (item 5)": ["lib_cg_row_sum", "lib_cg_row_sum_wrong_op"],
    "gathers with a range precondition (item 8)": ["lib_embedding_lookup", "lib_embedding_no_precondition",
                                                   "lib_gather_target_logit", "lib_gather_target_logit_wrong_row"],
    "4-D permutes (item 9)": ["lib_permute_heads", "lib_permute_heads_swapped"],
    "Triton string constexprs (item 7)": ["lib_triton_activation_name", "lib_triton_activation_wrong_name"],
    "libdevice as Triton links it (item 3)": ["lib_triton_gelu_erf", "lib_triton_gelu_erf_wrong_scale",
                                              "lib_triton_gelu_tanh", "lib_triton_gelu_tanh_wrong_cubic",
                                              "lib_triton_silu_exp", "lib_triton_silu_exp_wrong_sign",
                                              "lib_triton_rsqrt_norm", "lib_triton_rsqrt_norm_wrong_eps"],
    "outputs read back (item 6)": ["lib_softmax_readback_rows", "lib_softmax_readback_sum",
                                   "lib_softmax_readback_neighbour_race",
                                   "sound_readback_overwritten_between_barriers"],
}


def timed(case: str, runs: int) -> tuple[float, str]:
    best, verdict = float("inf"), ""
    for _ in range(runs):
        start = time.perf_counter()
        verdict = run_verify(EXAMPLES / case / "lark.toml", 600.0).verdict
        best = min(best, time.perf_counter() - start)
    return best, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    for item, cases in ITEMS.items():
        print(item, flush=True)
        for case in cases:
            seconds, verdict = timed(case, args.runs)
            print(f"  {case:36} {seconds:8.2f} s  ({verdict})", flush=True)


if __name__ == "__main__":
    main()
