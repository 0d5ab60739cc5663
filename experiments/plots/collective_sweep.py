"""Bus bandwidth against message size, one line per (system, algorithm). Usage: CSV PNG TITLE."""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    src, dst, title = sys.argv[1], sys.argv[2], sys.argv[3]
    series = defaultdict(list)
    with open(src, newline="") as f:
        for row in csv.DictReader(f):
            key = f"{row['system']} / {row['algorithm_requested']}"
            series[key].append((float(row["bytes"]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(8, 5))
    for key in sorted(series):
        pts = sorted(series[key])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=key)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{title}: simulated bus bandwidth")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = dst + ".tmp.png"
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, dst)


if __name__ == "__main__":
    main()
