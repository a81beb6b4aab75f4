#!/usr/bin/env python3
"""bf16 GEMM throughput of PyTorch's torch.mm (cuBLAS) at 8192^3, as one JSON line: the
independent reference for ember's GEMM target (tools/gpu_check.sh runs it next to
`ember-bench --micro cuda`). Timed with CUDA events over 10 products after 3 warm-ups."""
import json

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
