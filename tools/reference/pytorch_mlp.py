#!/usr/bin/env python3
"""The reference benchmarks in PyTorch, printing ember-bench's JSON schema.

Runs the same models, data sizes and optimizers as `ember-bench --model seed|wide|large|cnn` so
that figures can be put side by side (docs/PERFORMANCE.md). Not part of CI.

  python3 tools/reference/pytorch_mlp.py --model seed --mode eager --device cpu --threads 1 --json
  python3 tools/reference/pytorch_mlp.py --model seed --mode compiled ...   # torch.compile if available
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# name -> (layer widths, activation, batch, samples, optimizer, autocast bf16)
MODELS = {
    "seed": ([100, 256, 10], nn.ReLU, 32, 10_000, "adam", False),
    "wide": ([784, 1024, 1024, 1024, 10], nn.ReLU, 256, 20_000, "adam", False),
    "large": ([4096] * 9, nn.GELU, 4096, 4096 * 8, "adamw", True),
    # tools/ember-bench/cnn_model.h: three 3x3 convolutions and a Linear on [1, 28, 28] images
    "cnn": (None, nn.ReLU, 64, 8192, "adam", False),
}


def build_cnn():
    layers, channels, side = [], 1, 28
    for out, stride in ((16, 1), (32, 2), (64, 2)):
        layers += [nn.Conv2d(channels, out, 3, stride=stride, padding=1), nn.ReLU()]
        channels, side = out, (side + 2 - 3) // stride + 1
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * side * side, 10))


def build(name, device):
    widths, activation, batch, samples, optimizer_name, autocast = MODELS[name]
    if name == "cnn":
        model = build_cnn().to(device)
        x = torch.randn(samples, 1, 28, 28, device=device)
        y = torch.randint(0, 10, (samples,), device=device)
        return model, torch.optim.Adam(model.parameters(), lr=1e-3), x, y, batch, autocast
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(activation())
    model = nn.Sequential(*layers).to(device)
    opt_cls = torch.optim.Adam if optimizer_name == "adam" else torch.optim.AdamW
    optimizer = opt_cls(model.parameters(), lr=1e-3)
    classes = widths[-1]
    x = torch.randn(samples, widths[0], device=device)
    y = torch.randint(0, classes, (samples,), device=device)
    return model, optimizer, x, y, batch, autocast


def percentile(values, fraction):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=MODELS, default="seed")
    parser.add_argument("--mode", choices=["eager", "compiled", "reduce-overhead"], default="eager")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    model, optimizer, x, y, batch, autocast = build(args.model, device)

    def step(xb, yb):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        return loss

    compile_ms = None
    if args.mode != "eager":
        if not hasattr(torch, "compile"):
            print(f"torch {torch.__version__} has no torch.compile; mode {args.mode} unavailable", file=sys.stderr)
            return 2
        mode = "reduce-overhead" if args.mode == "reduce-overhead" else None
        step = torch.compile(step, mode=mode)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    batches = x.shape[0] // batch
    times, loss = [], None
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for i in range(args.warmup + args.steps):
        b = i % batches
        xb, yb = x[b * batch:(b + 1) * batch], y[b * batch:(b + 1) * batch]
        sync()
        start = time.perf_counter()
        loss = step(xb, yb)
        sync()
        elapsed = time.perf_counter() - start
        if i == 0 and args.mode != "eager":
            compile_ms = elapsed * 1e3
        if i >= args.warmup:
            times.append(elapsed * 1e6)

    median = statistics.median(times)
    result = {
        "framework": f"pytorch-{torch.__version__}",
        "model": args.model,
        "mode": args.mode,
        "device": args.device,
        "threads": args.threads,
        "batch": batch,
        "steps": args.steps,
        "step_us_median": round(median, 2),
        "step_us_p10": round(percentile(times, 0.1), 2),
        "step_us_p90": round(percentile(times, 0.9), 2),
        "samples_per_s": round(batch / (median * 1e-6), 1),
        "peak_bytes": torch.cuda.max_memory_allocated() if device.type == "cuda" else None,
        "final_loss": round(float(loss), 6),
    }
    if compile_ms is not None:
        result["compile_ms"] = round(compile_ms, 1)
    if args.mode != "eager":
        # Whether reduce-overhead really replayed CUDA graphs (inductor skips them, quietly, for
        # some graphs) and whether dynamo split the step: from a private API, so best effort.
        try:
            from torch._dynamo.utils import counters
            result["cudagraph_skips"] = int(counters["inductor"].get("cudagraph_skips", 0))
            result["graph_breaks"] = int(sum(counters["graph_break"].values()))
        except Exception as error:  # noqa: BLE001 - any failure here must not cost the figures
            result["compile_counters"] = f"unavailable: {error}"
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>16}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
