#!/usr/bin/env python3
"""PyTorch's side of `ember-bench --micro cuda` (tools/gpu_check.sh runs them one after the other),
as two JSON lines. The first is the bf16 GEMM throughput of torch.mm (cuBLAS) at 8192^3: the
independent reference for ember's GEMM target, timed with CUDA events over 10 products after 3
warm-ups.

The second gives PyTorch's host cost of one eager op on the same machine, timed as ember's
(`--micro cuda`, "launch"): torch.add of two [4] float32 tensors in bursts of 256, the device
drained between bursts, untimed. It is called from Python, as PyTorch's users call it: a
calibration for ember's <= 5 us target, not a like-for-like C++ figure."""
import json
import time

import torch

size = 8192
a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    torch.mm(a, b)
start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(10):
    torch.mm(a, b)
stop.record()
stop.synchronize()
seconds = start.elapsed_time(stop) / 1e3 / 10
print(json.dumps({"benchmark": "pytorch_gemm", "framework": f"pytorch-{torch.__version__}", "m": size,
                  "n": size, "k": size, "dtype": "bfloat16", "tflop_per_s": 2 * size**3 / seconds / 1e12}))

x = torch.randn(4, device="cuda")
y = torch.randn(4, device="cuda")
for _ in range(2000):
    torch.add(x, y)
torch.cuda.synchronize()
burst, bursts, total = 256, 78, 0.0
for _ in range(bursts):
    begin = time.perf_counter()
    for _ in range(burst):
        torch.add(x, y)
    total += time.perf_counter() - begin
    torch.cuda.synchronize()
print(json.dumps({"benchmark": "pytorch_launch", "framework": f"pytorch-{torch.__version__}",
                  "op": "torch.add [4] + [4] float32, from Python",
                  "host_us_per_op_in_bursts": total / (burst * bursts) * 1e6}))
