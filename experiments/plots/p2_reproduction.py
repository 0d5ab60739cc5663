"""Figures of the p2-reproduction experiment. Usage: RESULTS_DIR TITLE.

spread.png: per configuration, the ratio slowest/fastest placement of plain AllReduce and of the best program.
speedup_hist.png: histogram of the best program's speedup over AllReduce per case, ring and tree apart.
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    out_dir, title = sys.argv[1], sys.argv[2]
    with open(os.path.join(out_dir, "spread.csv"), newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["matrices"]) > 1]
    labels = [r["configuration"] for r in rows]
    ar = [float(r["allreduce_spread"]) for r in rows]
    best = [float(r["best_spread"]) for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.22), 5.5))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], ar, width=0.4, label="AllReduce")
    ax.bar([x + 0.2 for x in xs], best, width=0.4, label="best synthesized program")
    ax.set_yscale("log")
    ax.set_ylim(bottom=1)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_ylabel("slowest / fastest placement")
    ax.set_title(f"{title}: placement spread per configuration (multi-placement configurations)")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "spread.png"), dpi=130)

    speedups = {"ring": [], "tree": []}
    with open(os.path.join(out_dir, "cases.csv"), newline="") as f:
        for r in csv.DictReader(f):
            speedups.setdefault(r["algorithm"], []).append(float(r["speedup"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    top = max(max(v) for v in speedups.values() if v)
    bins = [1.0 + i * (top - 1.0 + 1e-9) / 30 for i in range(31)]
    ax.hist([speedups[k] for k in sorted(speedups)], bins=bins, stacked=True, label=sorted(speedups))
    ax.set_xlabel("best program / AllReduce speedup")
    ax.set_ylabel("cases")
    ax.set_title(f"{title}: speedup of the best synthesized program")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "speedup_hist.png"), dpi=130)


if __name__ == "__main__":
    main()
