"""Predicted speedup and optimizer time per model, one bar per optimizer. Usage: OUT_DIR TITLE
(reads OUT_DIR/results.csv written by the subst-optimizers experiment; writes speedup.png and time.png)."""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(rows, models, optimizers, field, ylabel, title, dst, log=False):
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(optimizers)
    for i, opt in enumerate(optimizers):
        ys = [next((float(r[field]) for r in rows if r["model"] == m and r["optimizer"] == opt), 0.0) for m in models]
        xs = [k + (i - (len(optimizers) - 1) / 2) * width for k in range(len(models))]
        ax.bar(xs, ys, width, label=opt)
    ax.set_xticks(range(len(models)))
    ax.set_xticklabels(models)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if log:
        ax.set_yscale("log")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = dst + ".tmp.png"
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, dst)


def main() -> None:
    out_dir, title = sys.argv[1], sys.argv[2]
    with open(os.path.join(out_dir, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    models = list(dict.fromkeys(r["model"] for r in rows))
    optimizers = list(dict.fromkeys(r["optimizer"] for r in rows))
    bars(rows, models, optimizers, "speedup", "predicted speedup (x)", f"{title}: predicted speedup",
         os.path.join(out_dir, "speedup.png"))
    bars(rows, models, optimizers, "optimizer_seconds", "optimizer time (s)", f"{title}: optimizer time",
         os.path.join(out_dir, "time.png"), log=True)


if __name__ == "__main__":
    main()
