"""Bus bandwidth against message size, one line per (system, algorithm). Usage: CSV PNG TITLE [WHAT], WHAT the
subtitle (default "simulated bus bandwidth"; `strata validate nccl-tests` draws measured beside simulated)."""
import sys
from collections import defaultdict

from plot_common import read_rows, save_figure  # first: selects the Agg backend
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    src, dst, title = sys.argv[1], sys.argv[2], sys.argv[3]
    what = sys.argv[4] if len(sys.argv) > 4 else "simulated bus bandwidth"
    series = defaultdict(list)
    for row in read_rows(src):
        key = f"{row['system']} / {row['algorithm_requested']}"
        series[key].append((float(row["bytes"]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(8, 5))
    for key in sorted(series):
        pts = sorted(series[key])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=key)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{title}: {what}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
