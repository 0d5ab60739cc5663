"""Figures of the emulated-validation experiment. Usage: RESULTS_DIR TITLE.

predicted_vs_measured.png: every measured point (collective sizes and synthesis candidates), simulated time
against measured median with min-max bars, log-log, with the y = x line.
topk.png: per synthesis case, top-1/5/10 hits, Spearman and regret.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main() -> None:
    out_dir, title = sys.argv[1], sys.argv[2]
    coll = read(os.path.join(out_dir, "collectives.csv"))
    synth = read(os.path.join(out_dir, "synth.csv"))
    fig, ax = plt.subplots(figsize=(7, 6))
    pts = []
    for op in sorted({r["op"] for r in coll}):
        rows = [r for r in coll if r["op"] == op]
        m = [float(r["measured_median_us"]) / 1e3 for r in rows]
        lo = [m[i] - float(r["measured_min_us"]) / 1e3 for i, r in enumerate(rows)]
        hi = [float(r["measured_max_us"]) / 1e3 - m[i] for i, r in enumerate(rows)]
        s = [float(r["simulated_us"]) / 1e3 for r in rows]
        ax.errorbar(m, s, xerr=[lo, hi], fmt="o", ms=4, capsize=2, label=f"{op} (sizes)")
        pts += m + s
    for case in sorted({r["case"] for r in synth}):
        rows = [r for r in synth if r["case"] == case]
        m = [float(r["measured_median_ms"]) for r in rows]
        lo = [m[i] - float(r["measured_min_ms"]) for i, r in enumerate(rows)]
        hi = [float(r["measured_max_ms"]) - m[i] for i, r in enumerate(rows)]
        s = [float(r["predicted_ms"]) for r in rows]
        ax.errorbar(m, s, xerr=[lo, hi], fmt="s", ms=4, capsize=2, alpha=0.8, label=f"synth {case}")
        pts += m + s
    if pts:
        lo, hi = min(p for p in pts if p > 0) / 1.5, max(pts) * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured time (ms, median; bars: min-max)")
    ax.set_ylabel("simulated time (ms)")
    ax.set_title(f"{title}: simulated vs measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "predicted_vs_measured.png"), dpi=130)

    cases = read(os.path.join(out_dir, "synth_cases.csv"))
    if cases:
        fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(cases)), 4.5))
        xs = range(len(cases))
        for j, (key, label) in enumerate([("top1", "top-1"), ("top5", "top-5"), ("top10", "top-10")]):
            ax.bar([x + (j - 1) * 0.2 for x in xs], [int(c[key]) for c in cases], width=0.2, label=label)
        ax.plot(list(xs), [float(c["spearman"]) for c in cases], "kD", label="Spearman")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([c["case"] for c in cases], fontsize=8, rotation=15)
        ax.set_ylim(0, 1.1)
        ax.set_ylabel("hit (1) / miss (0); Spearman's rho")
        ax.set_title(f"{title}: did the simulator rank the measured-fastest program in its top k?")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "topk.png"), dpi=130)


if __name__ == "__main__":
    main()
