"""model-sim figures: simulated time per model split by operator type (the 7 largest types of all models, the
rest as 'other'), and the achieved share of the GPU's peak. Usage: MODELS_CSV OPS_CSV PNG TITLE."""
import sys
from collections import defaultdict

from plot_common import read_rows, save_figure  # first: selects the Agg backend
import matplotlib.pyplot as plt  # noqa: E402

SHOWN = 7


def main() -> None:
    models_csv, ops_csv, dst, title = sys.argv[1:5]
    models = read_rows(models_csv)
    ops = read_rows(ops_csv)
    labels = [m["model"] for m in models]
    total = defaultdict(float)
    for r in ops:
        total[r["op"]] += float(r["seconds"])
    shown = sorted(total, key=lambda op: -total[op])[:SHOWN]
    per = {label: defaultdict(float) for label in labels}
    for r in ops:
        per[r["model"]][r["op"] if r["op"] in shown else "other"] += float(r["seconds"]) * 1e3
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 0.5 * len(labels) + 2.5),
                                  gridspec_kw={"width_ratios": [3, 1]})
    left = [0.0] * len(labels)
    for op in shown + ["other"]:
        widths = [per[label][op] for label in labels]
        if not any(widths):
            continue
        ax.barh(labels, widths, left=left, label=op)
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("simulated step time (ms)")
    ax.invert_yaxis()
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"{title}: time by operator type")
    shares = [100 * float(m["peak_fraction"]) for m in models]
    ax2.barh(labels, shares, color="tab:cyan")
    ax2.set_xlabel("achieved share of peak (%)")
    ax2.set_xlim(0, 100)
    ax2.invert_yaxis()
    ax2.set_yticklabels([])
    ax2.grid(True, axis="x", alpha=0.3)
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
