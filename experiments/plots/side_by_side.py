"""A paper's published numbers beside strata's (experiments/side_by_side.cc) from side_by_side.csv.

Usage: CSV PNG TITLE
  One panel per (published table, metric): grouped bars per row, the paper's value beside strata's, with the
  strata/paper ratio written over each pair; a log y axis when the values span more than a decade.
"""
import math
import sys

from plot_common import plt, read_rows, save_figure  # first: selects the Agg backend


def number(text):
    return float(text) if text not in ("", None) else None


def panels(rows):
    order = []
    for r in rows:
        key = (r["table"], r["metric"], r["label"], r["unit"])
        if key not in order:
            order.append(key)
    return order


def draw_panel(ax, rows, table, metric, label, unit):
    sel = [r for r in rows if r["table"] == table and r["metric"] == metric]
    labels = [r["row"] for r in sel]
    paper = [number(r["paper"]) for r in sel]
    strata = [number(r["strata"]) for r in sel]
    xs = range(len(sel))
    width = 0.4
    ax.bar([x - width / 2 for x in xs], [p or 0 for p in paper], width, label="paper (published)", color="#4c72b0")
    ax.bar([x + width / 2 for x in xs], [s or 0 for s in strata], width, label="strata (this run)", color="#dd8452")
    values = [v for v in paper + strata if v is not None]
    positive = [v for v in values if v > 0]
    if positive and max(positive) / min(positive) > 10:
        ax.set_yscale("log")
    floor = min(positive) if positive else 1
    for x, p, s in zip(xs, paper, strata):
        if p is not None and s is not None and p != 0:
            ax.annotate(f"{s / p:.2g}x", (x, max(p, s, floor)), ha="center", va="bottom", fontsize=7)
        if s is None and p is not None:
            ax.annotate("not computed", (x + width / 2, floor), ha="center", va="bottom", fontsize=6, rotation=90)
        elif s == 0:
            ax.annotate("0", (x + width / 2, floor), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=30 if len(labels) > 5 else 0, ha="right" if len(labels) > 5 else "center",
                       fontsize=8)
    ax.set_ylabel(f"{label} ({unit})" if unit else label)
    ax.set_title(f"{table}: {label}", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    if values:
        top = max(values)
        if ax.get_yscale() != "log":
            ax.set_ylim(0, top * 1.3)
        else:
            ax.set_ylim(min(positive) / 2, top * 3)


def main() -> None:
    src, dst, title = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = read_rows(src)
    keys = panels(rows)
    cols = min(2, len(keys))
    nrows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(6.5 * cols, 4.2 * nrows), squeeze=False)
    for ax, (table, metric, label, unit) in zip(axes.flat, keys):
        draw_panel(ax, rows, table, metric, label, unit)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8, loc="upper left", ncol=2)
    fig.suptitle(f"{title}: published vs strata")
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
