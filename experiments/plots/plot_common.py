"""What every figure script of experiments/plots/ does alike: read a CSV the kind wrote, and write a figure
atomically (to a temporary file renamed into place, so an interrupted run never leaves half a PNG)."""
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    """The rows of a CSV file as dicts keyed by its header."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def save_figure(fig, dst, dpi=120):
    """Lays the figure out, writes it to `dst` atomically and closes it."""
    fig.tight_layout()
    tmp = dst + ".tmp.png"
    fig.savefig(tmp, dpi=dpi)
    plt.close(fig)
    os.replace(tmp, dst)
