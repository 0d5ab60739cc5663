"""strata from Python: the same engine as the `strata` command line (docs/python.md).

Every function calls the C++ library function the matching command calls and returns plain Python values
(dicts, lists, numbers, strings). Bad input raises strata.Error with the message the command line prints after
"strata: error: ".

    import strata
    system = strata.load_system("configs/hw/dgx-a100.yaml")
    rows = strata.collective(system, op="allreduce", algo="ring", sizes="1MiB:1GiB:4")
"""
import os

from ._strata import (Error, Model, System, __version__, check_experiment, dry_run, load_model, load_system,
                      optimize, parallelize, run_experiment, simulate_model, simulate_step, synthesize)
from . import _strata

__all__ = ["Error", "Model", "System", "__version__", "check_experiment", "collective", "collective_array", "dry_run",
           "load_model", "load_system", "optimize", "parallelize", "run_experiment", "simulate_model",
           "simulate_step", "synthesize", "TABLE_FIELDS"]

# strata's data files (configs/, plot scripts) are found from where this package lies.
_strata._anchor_data_files(_strata.__file__)

# The nccl-tests columns of a collective table, in order, with their NumPy types (collective_array).
TABLE_FIELDS = [("size_bytes", "f8"), ("count_elements", "f8"), ("type", "U8"), ("redop", "U8"), ("root", "i4"),
                ("time_us", "f8"), ("algbw_GBps", "f8"), ("busbw_GBps", "f8"), ("algorithm", "U24"),
                ("protocol", "U8")]


def _system(system, nodes):
    if isinstance(system, System):
        if nodes:
            raise Error("nodes: give either a loaded System or a path with nodes, not both")
        return system
    return load_system(os.fspath(system), nodes or 0)


def collective(system, op="allreduce", algo="auto", protocol="auto", sizes="8B:8GiB", dtype="fp32", group="",
               channels=0, granularity="flow", nodes=0, trace="", nccl_rating=False):
    """Simulate a collective over a size sweep (strata sim collective): one dict per size with the
    nccl-tests columns (size_bytes, count_elements, type, redop, root, time_us, algbw_GBps, busbw_GBps; GB =
    10^9 B) and the algorithm and protocol that ran. `system` is a System or a system YAML path; `trace` names
    a JSON file for a Chrome/Perfetto trace of the largest size (--trace); `nccl_rating` adds nccl_time_us,
    NCCL 2.21's own predicted time of what ran, or None where NCCL does not rate it (--nccl-rating)."""
    return _strata._collective(_system(system, nodes), op, algo, protocol, sizes, dtype, granularity, group,
                               channels, os.fspath(trace), nccl_rating)


def collective_array(system, **options):
    """collective() as a NumPy structured array with the fields of TABLE_FIELDS."""
    import numpy as np
    rows = collective(system, **options)
    return np.array([tuple(r[name] for name, _ in TABLE_FIELDS) for r in rows], dtype=TABLE_FIELDS)
