"""The figure of a sweep (experiments/sweep.h). Usage: SWEEP_JSON PNG TITLE.

Plots the series strata chose (sweep.json "plot": table, metric, rows, and "series", one per plotted row with
its value at every point) against the swept axes. One row: one axis gives a line (bars when its values are not
numbers), two axes of a grid a heatmap, sampled sweeps (random, lhs) a scatter over the first axis coloured by
the second, and three or more axes lines over the first axis, one per combination of the others. Several rows
(`plot: {row: all}`): lines over the first axis, one per row and combination of the other axes. Axes whose
values span two decades or more use a log scale.
"""
import json
import math
import sys
from collections import defaultdict

from plot_common import save_figure  # first: selects the Agg backend
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

UNITS = {"GBps": "GB/s", "us": "us", "ms": "ms", "s": "s", "GB": "GB", "GiB": "GiB", "B": "bytes",
         "pct": "%", "x": "x", "TFLOPS": "TFLOPS"}


def metric_label(name):
    """busbw_GBps -> 'busbw (GB/s)': the unit suffix of the kind's column name, spelled out."""
    stem, _, suffix = name.rpartition("_")
    return f"{stem} ({UNITS[suffix]})" if stem and suffix in UNITS else name


def axis_label(axis):
    if axis["target"] == "scale":
        return f"{axis['name']} (x the system's figure)"
    unit = axis.get("range", {}).get("unit")
    return f"{axis['name']} ({unit})" if unit else axis["name"]


def number(text):
    try:
        v = float(text.split()[0]) if text else math.nan
        return v if math.isfinite(v) else None
    except ValueError:
        return None


def spans_decades(values, ratio=100):
    pos = [v for v in values if v is not None and v > 0]
    return len(pos) == len(values) and len(pos) > 1 and max(pos) / min(pos) >= ratio


def main() -> None:
    meta_path, dst, title = sys.argv[1:4]
    with open(meta_path) as f:
        meta = json.load(f)
    plot, axes, mode = meta["plot"], meta["axes"], meta["mode"]
    series = plot["series"]  # chosen by strata (experiments/sweep_report.cc): a line per plotted row
    y = {p: v for p, v in enumerate(series[0]["values"]) if v is not None}
    values = [[pt["values"][a["name"]] for a in axes] for pt in meta["points"]]
    names = [a["name"] for a in axes]
    points = sorted(y)
    fig, ax = plt.subplots(figsize=(8, 5))
    ylabel = metric_label(plot["metric"]) + (f" ({plot['unit']})" if plot.get("unit") else "")
    xs = [number(values[p][0]) for p in points]
    numeric_x = all(v is not None for v in xs)
    single = len(series) == 1
    if single and len(axes) == 2 and mode == "grid":
        cols = list(dict.fromkeys(values[p][0] for p in sorted(range(len(values)))))
        rows = list(dict.fromkeys(values[p][1] for p in sorted(range(len(values)))))
        grid = [[math.nan] * len(cols) for _ in rows]
        for p in points:
            grid[rows.index(values[p][1])][cols.index(values[p][0])] = y[p]
        im = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(cols)), cols, rotation=30 if max(len(c) for c in cols) > 6 else 0)
        ax.set_yticks(range(len(rows)), rows)
        for i in range(len(rows)):
            for j in range(len(cols)):
                if not math.isnan(grid[i][j]):
                    ax.text(j, i, f"{grid[i][j]:.3g}", ha="center", va="center", color="w", fontsize=8)
        fig.colorbar(im, ax=ax, label=ylabel)
        ax.set_xlabel(axis_label(axes[0]))
        ax.set_ylabel(axis_label(axes[1]))
    elif single and mode in ("random", "lhs") and numeric_x:
        colour = [number(values[p][1]) for p in points] if len(axes) > 1 else None
        if colour and all(c is not None for c in colour):
            norm = matplotlib.colors.LogNorm() if spans_decades(colour) else None
            sc = ax.scatter(xs, [y[p] for p in points], c=colour, cmap="viridis", norm=norm)
            fig.colorbar(sc, ax=ax, label=axis_label(axes[1]))
        else:
            ax.scatter(xs, [y[p] for p in points])
        ax.set_xlabel(axis_label(axes[0]))
        ax.set_ylabel(ylabel)
        if spans_decades(xs):
            ax.set_xscale("log")
    elif single and not numeric_x and len(axes) == 1:
        ax.bar([values[p][0] for p in points], [y[p] for p in points])
        ax.set_xlabel(axis_label(axes[0]))
        ax.set_ylabel(ylabel)
    else:
        lines = defaultdict(list)
        for line in series:
            for p, v in enumerate(line["values"]):
                if v is None:
                    continue
                parts = [line["label"]] if line["label"] else []
                parts += [f"{n}={val}" for n, val in zip(names[1:], values[p][1:])]
                x = number(values[p][0]) if numeric_x else values[p][0]
                lines[", ".join(parts)].append((x, v))
        for key, pts in lines.items():
            pts = sorted(pts) if numeric_x else pts
            ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", label=key or None)
        if len(lines) > 1:
            ax.legend(fontsize=7 if len(lines) > 8 else 8)
        ax.set_xlabel(axis_label(axes[0]))
        ax.set_ylabel(ylabel)
        if numeric_x and spans_decades(xs):
            ax.set_xscale("log")
        elif numeric_x and axes[0]["target"] == "scale" and spans_decades(xs, ratio=8):
            ax.set_xscale("log", base=2)  # scale factors: 1/8x ... 4x
    if not (single and len(axes) == 2 and mode == "grid"):
        if spans_decades([v for line in series for v in line["values"] if v is not None]):
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    ax.set_title(f"{title}: {plot['metric']} ({plot['table']}, {plot['rows']})")
    save_figure(fig, dst)


if __name__ == "__main__":
    main()
