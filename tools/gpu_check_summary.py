#!/usr/bin/env python3
"""The end of tools/gpu_check.sh: its JSON lines as tables a reader checks the issues against.

    python3 tools/gpu_check_summary.py gpu_check.jsonl

Prints the benchmark rows (one per model, framework and mode), then issue 3's GPU targets, each
with what was measured and "met", "NOT met" or "not measured", then issue 4's compiled-against-
eager speedups per model, then the micro-benchmarks' raw JSON. A missing figure is never
counted as met. Standard library only: it runs wherever gpu_check runs.
"""
import json
import sys


def read_rows(path):
    rows = []
    with open(path) as lines:
        for line in lines:
            try:
                rows.append(json.loads(line))
            except ValueError:
                pass  # a benchmark that printed something else: its log says what
    return rows


def mode_of(row):
    return (row["mode"] + (" no-fuse" if row.get("fuse") is False else "")
            + (" +read" if row.get("host_read") else ""))


def model_table(rows):
    lines = [f"{'model':<6} {'framework':<22} {'mode':<16} {'device':<7} {'step us':>10} {'samples/s':>12} "
             f"{'peak MB':>9}"]
    for r in rows:
        if "model" in r:
            lines.append(f"{r['model']:<6} {r.get('framework', 'ember'):<22} {mode_of(r):<16} {r['device']:<7} "
                         f"{r['step_us_median']:>10.1f} {r['samples_per_s']:>12.0f} "
                         f"{(r.get('peak_bytes') or 0) / 1e6:>9.1f}")
    return lines


def on_cuda(row):
    return str(row.get("device", "")).startswith("cuda")


def step_us(rows, model, mode, framework="ember"):
    """The step time of one benchmark row, or None when that row is missing."""
    for r in rows:
        if r.get("model") == model and r.get("framework", "ember") == framework and mode_of(r) == mode:
            return r["step_us_median"]
    return None


def verdict(ok):
    if ok == "info":
        return ""
    return "not measured" if ok is None else ("met" if ok else "NOT met")


def issue3_targets(rows):
    # The targets are the GPU's: a CPU row (gpu_check's rehearsal) never counts for or against one.
    rows = [r for r in rows if "model" not in r or on_cuda(r)]
    micro = next((r for r in rows if r.get("benchmark") == "cuda_micro"), {})
    targets = []  # (what, target, measured, ok or None)

    gemm = micro.get("gemm")
    if gemm:
        fraction = gemm["ember_fraction_of_raw"]
        targets.append(("GEMM bf16 8192^3 against raw cuBLASLt", ">= 85%",
                        f"{fraction:.1%} ({gemm['ember_mm_tflop_per_s']:.1f} of "
                        f"{gemm['raw_cublaslt_tflop_per_s']:.1f} TFLOP/s)", fraction >= 0.85))
    else:
        targets.append(("GEMM bf16 8192^3 against raw cuBLASLt", ">= 85%", "-", None))

    pointwise = micro.get("pointwise") or []
    if pointwise:
        lowest = min(pointwise, key=lambda p: p["fraction_of_copy"])
        targets.append(("pointwise against the device copy, 256 MiB", ">= 80% each",
                        f"lowest {lowest['op']} {lowest['fraction_of_copy']:.1%}", lowest["fraction_of_copy"] >= 0.80))
    else:
        targets.append(("pointwise against the device copy, 256 MiB", ">= 80% each", "-", None))

    launch = micro.get("launch")
    if launch and "host_us_per_op_in_bursts" in launch:
        floor = launch.get("host_us_per_empty_kernel_in_bursts")
        floor_text = f"an empty kernel {floor:.2f}" if floor is not None else "an empty kernel not measured"
        burst = launch["host_us_per_op_in_bursts"]
        targets.append(("host cost of one eager op, in bursts", "<= 5 us",
                        f"{burst:.2f} us (in a row {launch['host_us_per_op']:.2f}; {floor_text})", burst <= 5.0))
        torch_launch = next((r for r in rows if r.get("benchmark") == "pytorch_launch"), None)
        if torch_launch:
            torch_us = torch_launch["host_us_per_op_in_bursts"]
            targets.append(("  PyTorch's, from Python, same bursts", "", f"{torch_us:.2f} us", "info"))
        parts = [(name, launch.get(key)) for name, key in (
            ("empty kernel", "host_us_per_empty_kernel_in_bursts"),
            ("device guard", "host_us_per_device_guard_in_bursts"),
            ("empty tensor", "host_us_per_empty_tensor_in_bursts"))]
        if all(value is not None for _, value in parts):
            rest = burst - sum(value for _, value in parts)
            decomposition = ", ".join(f"{name} {value:.2f}" for name, value in parts)
            targets.append(("  its parts, us", "", f"{decomposition}, the rest {rest:.2f}", "info"))
    else:
        targets.append(("host cost of one eager op, in bursts", "<= 5 us", "-", None))

    models = [r for r in rows if "model" in r and r.get("framework", "ember") == "ember"]
    counts = [r["backend_allocations_in_steps"] for r in models if "backend_allocations_in_steps" in r]
    if launch and "backend_allocations" in launch:
        counts.append(launch["backend_allocations"])
    targets.append(("cudaMalloc calls after warm-up", "0",
                    f"{sum(counts)} in {len(counts)} runs" if counts else "-", (sum(counts) == 0) if counts else None))

    ember = step_us(rows, "seed", "eager")
    torch = next((r["step_us_median"] for r in rows if r.get("model") == "seed" and r.get("mode") == "eager"
                  and r.get("framework", "ember") != "ember"), None)
    both = ember is not None and torch is not None
    targets.append(("seed eager: ember against PyTorch eager", "faster",
                    f"{ember:.1f} against {torch:.1f} us" if both else "-", (ember < torch) if both else None))
    lines = [f"{'issue 3 target':<44} {'wanted':<12} {'measured':<58} verdict"]
    for what, wanted, measured, ok in targets:
        lines.append(f"{what:<44} {wanted:<12} {measured:<58} {verdict(ok)}".rstrip())
    return lines


def issue4_speedups(rows):
    lines = [f"{'issue 4, model':<14} {'compiled':>10} {'reduce_overhead':>16} {'compiled, fused vs --no-fuse':>30}"]
    for model in ("seed", "wide", "large", "cnn"):
        eager = step_us(rows, model, "eager")
        if eager is None:
            continue
        compiled = step_us(rows, model, "compiled")
        replay = step_us(rows, model, "reduce_overhead")
        unfused = step_us(rows, model, "compiled no-fuse")

        def ratio(numerator, denominator):
            return f"{numerator / denominator:.2f}x" if numerator and denominator else "-"
        lines.append(f"{model:<14} {ratio(eager, compiled):>10} {ratio(eager, replay):>16} "
                     f"{ratio(unfused, compiled):>30}")
    lines.append("(eager step time over the mode's: above 1 is faster than eager; the last column is the "
                 "unfused compiled step's time over the fused one's)")
    return lines


def main(argv):
    if len(argv) != 2:
        print("usage: gpu_check_summary.py GPU_CHECK_JSONL", file=sys.stderr)
        return 2
    rows = read_rows(argv[1])
    for block in (model_table(rows), issue3_targets(rows), issue4_speedups(rows)):
        print("\n".join(block))
        print()
    for r in rows:
        if r.get("benchmark") in ("cuda_micro", "pytorch_gemm", "pytorch_launch"):
            print(r["benchmark"] + ":", json.dumps({k: v for k, v in r.items() if k != "benchmark"}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
