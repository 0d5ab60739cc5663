"""Bus bandwidth against message size, one line per (system, algorithm). Usage: CSV PNG TITLE [WHAT], WHAT the
subtitle (default "simulated bus bandwidth"; `strata validate nccl-tests` draws measured beside simulated).

With more lines than one colour cycle has, later lines change their dash and marker, so no two look alike; when
the bandwidths span more than 30x (small and large systems in one figure) the y axis is logarithmic."""
import sys
from collections import defaultdict

from plot_common import read_rows, save_figure  # first: selects the Agg backend
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

DASHES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D"]


def size_label(value, _pos=None) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def main() -> None:
    src, dst, title = sys.argv[1], sys.argv[2], sys.argv[3]
    what = sys.argv[4] if len(sys.argv) > 4 else "simulated bus bandwidth"
    series = defaultdict(list)
    for row in read_rows(src):
        key = f"{row['system']} / {row['algorithm_requested']}"
        series[key].append((float(row["bytes"]), float(row["busbw_GBps"])))
    fig, ax = plt.subplots(figsize=(10 if len(series) > 8 else 8, 5.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    positive = [bw for pts in series.values() for _, bw in pts if bw > 0]
    log_y = bool(positive) and max(positive) > 30 * min(positive)
    for i, key in enumerate(sorted(series)):
        # A log axis has no place for a zero (a bandwidth that rounds to 0.00 GB/s in the CSV).
        pts = sorted(p for p in series[key] if p[1] > 0 or not log_y)
        cycle = i // len(colours)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colours[i % len(colours)],
                linestyle=DASHES[cycle % len(DASHES)], marker=MARKERS[cycle % len(MARKERS)], markersize=3,
                label=key)
    if log_y:
        ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(size_label))
    ax.set_xlabel("message size")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title(f"{title}: {what}")
    ax.grid(True, which="both", alpha=0.3)
    if len(series) > 8:  # beside the axes, where it hides no line
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=8)
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
