#!/usr/bin/env python3
"""Command-line checks of issue 10's input defects, run against the built `strata`:
plain-byte and 1k sizes are accepted (defect 2); `--nodes 0`, `--group 0,1x,2y`, `--dim b=8abc` and
`--trace /nonexistent/dir/x.json` are refused with exit status 2, a message naming the option and what was
expected, no table printed first and no folder created.

Usage: cli_input_errors.py <strata binary>   (run from the source root)
"""
import os
import subprocess
import sys
import tempfile

STRATA = sys.argv[1]
failures = []


def run(*args):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def expect_error(args, message):
    rc, out, err = run(*args)
    if rc != 2 or message not in err or out:
        failures.append(f"strata {' '.join(args)}: expected exit 2, no output and '{message}' on stderr; "
                        f"got exit {rc}, stdout {out[:200]!r}, stderr {err[:300]!r}")


def table_sizes(out):
    return [int(line.split()[0]) for line in out.splitlines() if line.strip() and not line.startswith("#")]


def expect_sizes(sizes, expected):
    rc, out, err = run("sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--algo", "ring", "--sizes", sizes)
    got = table_sizes(out) if rc == 0 else None
    if got != expected:
        failures.append(f"--sizes {sizes}: expected rows {expected}, got {got} (exit {rc}, {err[:300]!r})")


# Defect 2: sizes as nccl-tests users type them; K/M/G are powers of 1024.
expect_sizes("1048576:4194304", [1 << 20, 1 << 21, 1 << 22])
expect_sizes("1k:4k", [1024, 2048, 4096])
expect_sizes("1M", [1 << 20])
expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--sizes", "0.4B"],
             "--sizes: '0.4B' is not a size: not a whole number of bytes")

# Defect 10, the parsing parts.
expect_error(["hw", "show", "configs/hw/dgx-h100.yaml", "--nodes", "0"],
             "--nodes: expected an integer in 1..1024, got '0'")
expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--nodes", "0"],
             "--nodes: expected an integer in 1..1024, got '0'")
expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--group", "0,1x,2y"],
             "--group: '1x' is not a rank or range")
expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--group", "5-3"],
             "--group: range '5-3' runs backwards")
expect_error(["optimize", "--model", "squeezenet", "--hw", "configs/hw/dgx-a100.yaml", "--alpha", "nan"],
             "--alpha: expected a number in 1..10, got 'nan'")
expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--group", "0-2147483647"],
             "--group: rank 2147483647 is outside 0..7")
with tempfile.TemporaryDirectory() as tmp:
    missing = os.path.join(tmp, "nonexistent", "dir")
    expect_error(["sim", "collective", "--hw", "configs/hw/dgx-a100.yaml", "--sizes", "1MiB", "--trace",
                  os.path.join(missing, "x.json")], "does not exist")
    if os.path.exists(os.path.join(tmp, "nonexistent")):
        failures.append("--trace into a missing folder created it")
    onnx = os.path.join(tmp, "squeezenet.onnx")
    rc, _, err = run("model", "export", "squeezenet", "-o", onnx)
    if rc != 0:
        failures.append(f"model export failed: {err[:300]!r}")
    expect_error(["model", "show", onnx, "--dim", "b=8abc"], "--dim b: expected an integer in 1..1048576, got '8abc'")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "all command-line input checks passed")
sys.exit(1 if failures else 0)
