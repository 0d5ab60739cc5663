#!/usr/bin/env python3
"""strata's CUDA-event timings beside PyTorch's, on the GPU (docs/gpu.md).

Usage: torch_timing_check.py points.csv out.csv
  points.csv: `strata validate calibrate-cost --device cuda --points-csv` (each microbenchmark's measured time)

An independent check of the GPU timing harness: every matmul and batch_matmul microbenchmark strata timed is
timed again through PyTorch (torch.mm / torch.bmm, fp32 with TF32 off, as strata's cuBLAS calls; CUDA events,
median of 50 runs after 5 warm-ups), both as replays of a CUDA graph of the call (as strata times a kernel
that can be captured) and as direct calls from Python (which add Python's issue time whenever the kernel is
shorter). Both call cuBLAS, so strata's time should match the graph replays. Also measures the device's two ceilings (METHOD: a large fp32 and a bf16
matrix product, a device-to-device copy counting bytes read plus written) to set beside the catalogue's
figures. Needs PyTorch with CUDA; exits 77 (skipped) without it.
"""
import csv
import re
import statistics
import sys

try:
    import torch
except ImportError:
    print("skipped: no PyTorch")
    sys.exit(77)
if not torch.cuda.is_available():
    print("skipped: PyTorch sees no GPU")
    sys.exit(77)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def median_ms(fn, reps=50, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_ms(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside the capture, as PyTorch's documentation asks
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return median_ms(graph.replay)


rows = []
for r in csv.DictReader(open(sys.argv[1])):
    mm = re.fullmatch(r"matmul (\d+)x(\d+)x(\d+)", r["benchmark"])
    bmm = re.fullmatch(r"batch_matmul (\d+)x(\d+)x(\d+)x(\d+)", r["benchmark"])
    if mm:
        m, k, n = map(int, mm.groups())
        a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        fn = lambda a=a, b=b: torch.mm(a, b)  # noqa: E731
    elif bmm:
        s, m, k, n = map(int, bmm.groups())
        a, b = torch.randn(s, m, k, device="cuda"), torch.randn(s, k, n, device="cuda")
        fn = lambda a=a, b=b: torch.bmm(a, b)  # noqa: E731
    else:
        continue
    strata_us, graph_us, direct_us = float(r["measured_us"]), 1e3 * graph_ms(fn), 1e3 * median_ms(fn)
    rows.append((r["benchmark"], strata_us, graph_us, direct_us, strata_us / graph_us - 1))

n = 8192
a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
fp32 = 2 * n**3 / (median_ms(lambda: torch.mm(a, b), 10, 3) / 1e3)
a16, b16 = a.bfloat16(), b.bfloat16()
bf16 = 2 * n**3 / (median_ms(lambda: torch.mm(a16, b16), 20, 3) / 1e3)
x = torch.randn(2**28, device="cuda")  # 1 GiB
y = torch.empty_like(x)
copy = 2 * x.numel() * 4 / (median_ms(lambda: y.copy_(x), 20, 3) / 1e3)

with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["benchmark", "strata_us", "torch_graph_us", "torch_direct_us", "difference_to_graph"])
    w.writerows(rows)
    w.writerow(["ceiling fp32 matmul 8192^3 (TFLOP/s)", "", f"{fp32 / 1e12:.1f}", "", ""])
    w.writerow(["ceiling bf16 matmul 8192^3 (TFLOP/s)", "", f"{bf16 / 1e12:.1f}", "", ""])
    w.writerow(["ceiling device copy 1 GiB, read+write (GB/s)", "", f"{copy / 1e9:.0f}", "", ""])
print(f"{torch.cuda.get_device_name()}, PyTorch {torch.__version__}, cuBLAS via torch; TF32 off")
print(f"{'benchmark':<34} {'strata':>10} {'torch graph':>12} {'diff':>7} {'torch direct':>13}")
for name, s, g, d, diff in rows:
    print(f"{name:<34} {s:>8.1f}us {g:>10.1f}us {100 * diff:>+6.1f}% {d:>11.1f}us")
diffs = [abs(d) for *_, d in rows]
if diffs:
    print(f"median |strata / torch graph - 1| over {len(diffs)} GEMMs: {100 * statistics.median(diffs):.1f}%")
print(f"ceilings: fp32 GEMM {fp32 / 1e12:.1f} TFLOP/s, bf16 GEMM {bf16 / 1e12:.1f} TFLOP/s, "
      f"copy {copy / 1e9:.0f} GB/s (read + write)")
