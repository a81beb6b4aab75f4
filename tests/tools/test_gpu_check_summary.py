#!/usr/bin/env python3
"""tools/gpu_check_summary.py on a real gpu_check run (gpu_check_h200_sample.jsonl: the H200 run
of 2026-12-04, commit 043b64f) and on edited copies of it: each target gets the verdict its
figures give, and a figure the run lacks is "not measured", never "met".

    python3 tests/tools/test_gpu_check_summary.py tools/gpu_check_summary.py
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SUMMARY = None  # the script under test, from argv
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_check_h200_sample.jsonl")
TARGETS = ("GEMM bf16 8192^3 against raw cuBLASLt", "pointwise against the device copy, 256 MiB",
           "host cost of one eager op, in bursts", "cudaMalloc calls after warm-up",
           "seed eager: ember against PyTorch eager")


def summarize(rows):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as out:
        for row in rows:
            out.write((row if isinstance(row, str) else json.dumps(row)) + "\n")
    try:
        return subprocess.run([sys.executable, SUMMARY, out.name], check=True, capture_output=True,
                              text=True).stdout
    finally:
        os.unlink(out.name)


def verdicts(text):
    """issue 3 target -> its verdict ("met", "NOT met", "not measured")."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("issue 3 target"))
    found = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        for verdict in ("NOT met", "not measured", "met"):
            if line.endswith(verdict):
                found[line[:44].strip()] = verdict
                break
    return found


def expected(*each):
    """The verdicts of TARGETS, in that order."""
    return dict(zip(TARGETS, each))


def speedups(text, model):
    """`model`'s row of the issue 4 block, split into its fields."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("issue 4, model"))
    return next(line for line in lines[start + 1:] if line.startswith(model + " ")).split()


def sample_rows():
    with open(SAMPLE) as lines:
        return [json.loads(line) for line in lines]


def micro(rows):
    return next(r for r in rows if r.get("benchmark") == "cuda_micro")


class SummaryTest(unittest.TestCase):
    def test_the_h200_run(self):
        text = summarize(sample_rows())
        self.assertEqual(verdicts(text), expected("met", "met", "NOT met", "met", "met"))
        self.assertIn("99.7% (801.1 of 803.9 TFLOP/s)", text)
        self.assertIn("lowest gelu 82.6%", text)
        self.assertIn("5.01 us (in a row 5.22; an empty kernel not measured)", text)
        self.assertIn("193.7 against 1572.5 us", text)
        # large: eager 6,624.4 us, compiled 6,865.2: slower than eager, shown as such.
        self.assertEqual(speedups(text, "large"), ["large", "0.96x", "0.96x", "-"])
        self.assertEqual(speedups(text, "seed"), ["seed", "1.65x", "2.38x", "-"])

    def test_each_figure_decides_its_own_verdict(self):
        rows = sample_rows()
        launch = micro(rows)["launch"]
        launch["host_us_per_op_in_bursts"] = 4.8
        launch["host_us_per_empty_kernel_in_bursts"] = 2.5
        micro(rows)["gemm"]["ember_fraction_of_raw"] = 0.80
        micro(rows)["pointwise"][0]["fraction_of_copy"] = 0.79
        next(r for r in rows if r.get("model") == "wide" and r["mode"] == "eager")["backend_allocations_in_steps"] = 3
        text = summarize(rows)
        self.assertEqual(verdicts(text), expected("NOT met", "NOT met", "met", "NOT met", "met"))
        self.assertIn("an empty kernel 2.50", text)
        self.assertNotIn("its parts", text)  # the guard and the empty tensor were not timed
        launch["host_us_per_device_guard_in_bursts"] = 0.3
        launch["host_us_per_empty_tensor_in_bursts"] = 0.5
        parts = summarize(rows)
        self.assertIn("empty kernel 2.50, device guard 0.30, empty tensor 0.50, the rest 1.50", parts)
        self.assertEqual(verdicts(parts), verdicts(text))  # a line of parts is no target
        calibrated = summarize(rows + [{"benchmark": "pytorch_launch", "host_us_per_op_in_bursts": 7.25}])
        self.assertIn("PyTorch's, from Python, same bursts", calibrated)
        self.assertIn("7.25 us", calibrated)
        self.assertEqual(verdicts(calibrated), verdicts(text))
        self.assertIn("lowest clone 79.0%", text)

    def test_what_a_run_lacks_is_not_measured(self):
        rows = [r for r in sample_rows()
                if r.get("benchmark") != "cuda_micro" and r.get("framework", "ember") == "ember"]
        rows.append("ember-bench: this line is not JSON")
        text = summarize(rows)
        # The model runs still count for cudaMalloc; PyTorch's seed row is gone.
        unmeasured = "not measured"
        self.assertEqual(verdicts(text), expected(unmeasured, unmeasured, unmeasured, "met", unmeasured))
        self.assertEqual(verdicts(summarize([]))["cudaMalloc calls after warm-up"], "not measured")

    def test_cpu_rows_never_decide_a_gpu_target(self):
        rows = [dict(r, device="cpu") for r in sample_rows() if "model" in r]
        rows[0]["backend_allocations_in_steps"] = 2  # a CPU allocator segment: not a cudaMalloc
        unmeasured = "not measured"
        self.assertEqual(verdicts(summarize(rows)), expected(*[unmeasured] * 5))

    def test_the_unfused_ablation_row(self):
        rows = sample_rows()
        compiled = next(r for r in rows if r.get("model") == "large" and r["mode"] == "compiled")
        unfused = dict(compiled, fuse=False, step_us_median=compiled["step_us_median"] * 1.1)
        text = summarize(rows + [unfused])
        self.assertEqual(speedups(text, "large")[-1], "1.10x")
        self.assertIn("compiled no-fuse", text)


if __name__ == "__main__":
    SUMMARY = sys.argv.pop(1)
    unittest.main()
