"""Speedup of strata's searched per-operator plan over data parallelism and over the expert plan, per model,
one panel per (cluster, GPU count), from the flexflow-reproduction kind's results.csv.

Usage: CSV PNG TITLE
"""
import sys

from plot_common import plt, read_rows, save_figure  # first: selects the Agg backend


def main() -> None:
    src, dst, title = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = read_rows(src)
    panels = list(dict.fromkeys((r["cluster"], int(r["gpus"])) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(max(5, 4.5 * len(panels)), 4.5), squeeze=False)
    for ax, (cluster, gpus) in zip(axes[0], panels):
        sel = [r for r in rows if r["cluster"] == cluster and int(r["gpus"]) == gpus]
        xs = range(len(sel))
        width = 0.4
        dp = [float(r["speedup_vs_dp"]) for r in sel]
        ex = [float(r["speedup_vs_expert"]) for r in sel]
        ax.bar([x - width / 2 for x in xs], dp, width, label="over data parallelism", color="#4c72b0")
        ax.bar([x + width / 2 for x in xs], ex, width, label="over the expert plan", color="#dd8452")
        ax.axhline(1.0, color="black", linewidth=0.8)
        for x, d, e in zip(xs, dp, ex):
            ax.text(x - width / 2, d, f"{d:.2f}", ha="center", va="bottom", fontsize=7)
            ax.text(x + width / 2, e, f"{e:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["model"] for r in sel], rotation=30, ha="right")
        ax.set_ylabel("speedup of the searched plan (x, step time ratio)")
        ax.set_title(f"{gpus} x {cluster}")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
