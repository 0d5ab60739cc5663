"""Figures of the cpu-validation experiment. Usage: RESULTS_DIR TITLE.

ops_scatter.png: every distinct operator instance of every model, predicted against measured time, log-log,
coloured by operator, with the y = x line.
op_errors.png: per operator family (all models), median |predicted / measured - 1| with min-max whiskers.
candidates_scatter.png (graphs.csv present): every optimizer candidate, predicted against measured whole-graph
time, one marker colour per model, with the y = x line.
"""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def diagonal(ax, pts):
    pts = [p for p in pts if p > 0]
    if not pts:
        return
    lo, hi = min(pts) / 1.5, max(pts) * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)


def log_axes(ax, xlabel, ylabel, title):
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)


def ops_scatter(out_dir, title, ops):
    fig, ax = plt.subplots(figsize=(8, 6.5))
    cmap = plt.get_cmap("tab20")
    pts = []
    for i, op in enumerate(sorted({r["op"] for r in ops})):
        rows = [r for r in ops if r["op"] == op]
        m = [float(r["measured_us"]) for r in rows]
        p = [float(r["predicted_us"]) for r in rows]
        ax.scatter(m, p, s=14, color=cmap(i % 20), label=f"{op} ({len(rows)})", alpha=0.85)
        pts += m + p
    diagonal(ax, pts)
    log_axes(ax, "measured time per instance (us, median)", "predicted time (us, cost model)",
             f"{title}: operator instances, predicted vs measured")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "ops_scatter.png"), dpi=130)


def op_errors(out_dir, title, ops):
    by_op = {}
    for r in ops:
        by_op.setdefault(r["op"], []).append(100 * abs(float(r["error"])))
    names = sorted(by_op)
    floor = 0.01  # % (log axis: smaller errors are drawn at the floor)
    by_op = {n: [max(e, floor) for e in v] for n, v in by_op.items()}
    med = [statistics.median(by_op[n]) for n in names]
    lo = [med[i] - min(by_op[n]) for i, n in enumerate(names)]
    hi = [max(by_op[n]) - med[i] for i, n in enumerate(names)]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(names) + 2), 4.8))
    xs = list(range(len(names)))
    ax.bar(xs, med, color="tab:blue", alpha=0.8, label="median |error|")
    ax.errorbar(xs, med, yerr=[lo, hi], fmt="none", ecolor="k", capsize=3, label="min - max")
    ax.axhline(15, color="tab:red", ls="--", lw=1, label="15% target")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{n}\n({len(by_op[n])})" for n in names], fontsize=7, rotation=30)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}%"))
    ax.set_ylabel("|predicted / measured - 1| (log scale)")
    ax.set_xlabel("operator (distinct instances)")
    ax.set_title(f"{title}: per-operator error")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "op_errors.png"), dpi=130)


def candidates_scatter(out_dir, title, cands):
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    pts = []
    for model in sorted({r["model"] for r in cands}):
        rows = [r for r in cands if r["model"] == model and r["equivalent"] == "1"]
        m = [float(r["measured_ms"]) for r in rows]
        p = [float(r["predicted_ms"]) for r in rows]
        ax.scatter(m, p, s=18, label=f"{model} ({len(rows)})", alpha=0.85)
        orig = [r for r in rows if r["candidate"].startswith("original")]
        if orig:
            ax.scatter([float(orig[0]["measured_ms"])], [float(orig[0]["predicted_ms"])], s=80,
                       facecolors="none", edgecolors="k")
        pts += m + p
    diagonal(ax, pts)
    log_axes(ax, "measured whole-graph time (ms, median)", "predicted graph time (ms, cost model)",
             f"{title}: optimizer candidates (circled: the original)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "candidates_scatter.png"), dpi=130)


def main() -> None:
    out_dir, title = sys.argv[1], sys.argv[2]
    ops = read(os.path.join(out_dir, "ops.csv"))
    if ops:
        ops_scatter(out_dir, title, ops)
        op_errors(out_dir, title, ops)
    cands = read(os.path.join(out_dir, "graphs.csv"))
    if cands:
        candidates_scatter(out_dir, title, cands)


if __name__ == "__main__":
    main()
