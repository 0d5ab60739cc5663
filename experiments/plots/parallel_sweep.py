"""Figures of a parallel-sweep experiment (experiments/parallel_sweep.cc) from its plans.csv.

Usage: CSV STEP_TIME_PNG MEMORY_PNG BREAKDOWN_PNG TITLE
  step_time.png  step time and MFU against GPUs, one line per family (plans that fit only), log-2 x axis;
  memory.png     peak memory per GPU against GPUs, every plan with a memory figure (out of memory included),
                 with the GPU's capacity as a dashed line;
  breakdown.png  one stacked bar per (nodes, family) that ran: compute, recompute, exposed TP/CP/EP
                 communication, pipeline bubble, exposed DP communication, optimizer.
"""
import sys
from collections import defaultdict

from plot_common import read_rows, save_figure  # first: selects the Agg backend
import matplotlib.pyplot as plt  # noqa: E402

BREAKDOWN = [("compute_s", "compute"), ("recompute_s", "recompute"), ("tp_comm_s", "TP comm"),
             ("cp_comm_s", "CP comm"), ("ep_comm_s", "EP comm"), ("bubble_s", "pipeline bubble"),
             ("dp_exposed_s", "exposed DP comm"), ("optimizer_s", "optimizer")]


def families_in_order(rows):
    seen = []
    for r in rows:
        if r["family"] not in seen:
            seen.append(r["family"])
    return seen


def step_time(rows, dst, title):
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.5))
    for fam in families_in_order(rows):
        pts = sorted((int(r["gpus"]), float(r["step_s"]), float(r["mfu"])) for r in rows
                     if r["family"] == fam and r["status"] == "ok")
        if not pts:
            continue
        ax_t.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=fam)
        ax_m.plot([p[0] for p in pts], [100 * p[2] for p in pts], marker="o", label=fam)
    for ax in (ax_t, ax_m):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.grid(True, which="both", alpha=0.3)
    ax_t.set_yscale("log")
    ax_t.set_ylabel("step time (s)")
    ax_t.set_title(f"{title}: simulated step time")
    ax_m.set_ylabel("MFU (%)")
    ax_m.set_ylim(bottom=0)
    ax_m.set_title("model FLOPs utilization")
    ax_t.legend(fontsize=8)
    save_figure(fig, dst)


def memory(rows, dst, title):
    fig, ax = plt.subplots(figsize=(8, 5))
    gib = 2.0 ** 30
    for fam in families_in_order(rows):
        pts = sorted((int(r["gpus"]), float(r["peak_memory_bytes"]) / gib, r["fits"] == "true") for r in rows
                     if r["family"] == fam and r["peak_memory_bytes"])
        if not pts:
            continue
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=fam)
        over = [p for p in pts if not p[2]]
        ax.scatter([p[0] for p in over], [p[1] for p in over], marker="x", s=80, color=line.get_color())
    capacities = {float(r["capacity_bytes"]) for r in rows if r["capacity_bytes"]}
    for cap in sorted(capacities):
        ax.axhline(cap / gib, color="black", linestyle="--", linewidth=1, label=f"GPU memory ({cap / gib:.1f} GiB)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("peak memory per GPU (GiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{title}: peak memory per GPU (x: out of memory)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, dst)


def breakdown(rows, dst, title):
    ran = [r for r in rows if r["status"] == "ok"]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.55 * len(ran) + 2), 5))
    labels = [f"{r['nodes']} nodes\n{r['family']}" for r in ran]
    bottom = [0.0] * len(ran)
    for key, name in BREAKDOWN:
        values = [float(r[key]) for r in ran]
        if not any(values):
            continue
        ax.bar(range(len(ran)), values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(ran)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("seconds per step (first pipeline stage)")
    ax.set_title(f"{title}: where the step goes")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    save_figure(fig, dst)


def main() -> None:
    src, step_png, memory_png, breakdown_png, title = sys.argv[1:6]
    rows = read_rows(src)
    step_time(rows, step_png, title)
    memory(rows, memory_png, title)
    breakdown(rows, breakdown_png, title)


if __name__ == "__main__":
    main()
