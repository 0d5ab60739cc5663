#!/usr/bin/env python3
"""The `cpu-validation` experiment kind end to end (docs/replay.md §4).

1. Parse errors: bad fields are refused with exit status 2, naming the file, the line of the field, the field
   and what was expected; nothing is written.
2. A tiny grid (squeezenet batch 1 and a one-layer transformer, repeat 2, 2 rounds, calibrate: quick): both
   rounds ran over both models and the microbenchmarks (progress lines); the result files
   exist; ops.csv has, per model, as many rows as the model has distinct non-view operator instances (counted
   by `strata validate profile`) with node names that are distinct; every error recomputed from the measured
   and predicted columns equals the error column; models.csv's median/worst |error| and median round spread
   recomputed from ops.csv;
   cost_params.json is the quick fit for host-cpu; the summary states the issue 15 targets with the numbers.
3. The transformer again with `cost_params:` set to the first run's file and a `graphs:` section: the
   parameters are written back unchanged, graphs.csv starts with the original and every candidate is
   equivalent, graph_stats.csv's top-1 and regret recomputed from graphs.csv.
Reports itself skipped (exit 77) when strata was built without oneDNN.

Usage: cli_cpu_validation_test.py <strata binary>   (run from the source root)
"""
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

STRATA = sys.argv[1]
ENV = dict(os.environ, OMP_NUM_THREADS="1")  # one thread: a shared 2-core machine stalls OpenMP barriers
HW = os.path.abspath("configs/validate/host-cpu.yaml")
TINY = "transformer:layers=1,hidden=64,heads=2,vocab=100,seq=16"
failures = []


def run(*args):
    p = subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=600, env=ENV)
    return p.returncode, p.stdout, p.stderr


def config(body):
    return ("experiment: tiny\ndescription: test grid\nkind: cpu-validation\n"
            f"hw: {HW}\n" + body)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def line_of(text, needle):
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


GOOD_MODELS = "models:\n  - {model: squeezenet, batch: 1}\n"
BAD = [  # (body, the line's marker, words the message must hold)
    ("repeats: 2\n" + GOOD_MODELS, "repeats:", ["repeats", "unknown field"]),
    ("calibrate: maybe\n" + GOOD_MODELS, "calibrate:", ["calibrate", "expected true, false or quick"]),
    ("models:\n  - {model: nosuchnet}\n", "nosuchnet", ["model", "nosuchnet"]),
    ("models:\n  - {model: squeezenet, batch: 0}\n", "batch: 0", ["batch", "expected"]),
    ("models:\n  - {model: squeezenet, bacth: 1}\n", "bacth", ["bacth", "unknown field"]),
    ("repeat: 0\n" + GOOD_MODELS, "repeat: 0", ["repeat", "expected"]),
    ("rounds: 0\n" + GOOD_MODELS, "rounds: 0", ["rounds", "expected"]),
    (f"calibrate: quick\ncost_params: {HW}\n" + GOOD_MODELS, "cost_params:", ["cost_params", "not both"]),
    ("graphs: {samples: 3}\n" + GOOD_MODELS, "graphs:", ["samples", "unknown field"]),
    ("graphs: {min_gain: 101}\n" + GOOD_MODELS, "graphs:", ["min_gain", "expected a percentage in 0..100"]),
    ("models: []\n", "models:", ["models", "at least one model"]),
]

with tempfile.TemporaryDirectory() as tmp:
    out_dir = os.path.join(tmp, "out")
    # 1. parse errors
    for body, marker, words in BAD:
        path = os.path.join(tmp, "bad.yaml")
        text = config(body)
        write(path, text)
        rc, out, err = run("run", path, "--output", out_dir, "--no-plots")
        where = f"{path}:{line_of(text, marker)}:"
        if rc != 2 or where not in err or not all(w in err for w in words) or os.path.exists(out_dir):
            failures.append(f"{body!r}: expected exit 2 with {where} and {words}; got {rc}, {err!r}")

    # 2. the tiny grid, calibrated in the run
    exp = os.path.join(tmp, "tiny.yaml")
    write(exp, config(f"calibrate: quick\nmodels:\n  - {{model: squeezenet, batch: 1}}\n"
                      f"  - {{model: \"{TINY}\"}}\nrepeat: 2\nwarmup: 1\nrounds: 2\nseed: 3\n"))
    rc, out, err = run("run", exp, "--output", out_dir)
    if rc == 2 and "oneDNN was not found" in err:
        print("skipped: strata was built without oneDNN")
        sys.exit(77)
    res = os.path.join(out_dir, "tiny")
    if rc != 0:
        print(out, err)
        sys.exit(f"strata run failed: exit {rc}")
    for line in ("[round 2/2] squeezenet batch 1:", f"[round 2/2] {TINY}:"):
        if line not in err:
            failures.append(f"no progress line {line!r}")
    calib = re.findall(r"\[calibrate +(\d+)/(\d+)\]", err)
    if not calib or calib[-1][0] != calib[-1][1] or int(calib[-1][1]) % 2:
        failures.append(f"the microbenchmarks were not measured in two whole rounds: {calib[-3:]}")
    for f in ("ops.csv", "models.csv", "cost_params.json", "summary.md"):
        if not os.path.exists(os.path.join(res, f)):
            failures.append(f"{f} missing")
    summary = open(os.path.join(res, "summary.md")).read()
    if "figures could not be drawn" not in summary:  # drawn unless matplotlib is missing
        for f in ("ops_scatter.png", "op_errors.png"):
            if not os.path.exists(os.path.join(res, f)):
                failures.append(f"{f} missing (and the summary does not say why)")
    ops = rows(os.path.join(res, "ops.csv"))
    labels = {"squeezenet batch 1": ["--model", "squeezenet", "--batch", "1"], TINY: ["--model", TINY]}
    for label, args in labels.items():
        mine = [r for r in ops if r["model"] == label]
        rc, pout, perr = run("validate", "profile", *args, "--repeat", "1", "--warmup", "0", "-o",
                             os.path.join(tmp, "p.json"))
        m = re.search(r"(\d+) distinct operator instances", pout)
        if rc != 0 or not m:
            failures.append(f"validate profile {label}: exit {rc}, {perr[:200]!r}")
        elif len(mine) != int(m.group(1)):
            failures.append(f"{label}: {len(mine)} rows in ops.csv, profile counts {m.group(1)}")
        if len({r["node"] for r in mine}) != len(mine):
            failures.append(f"{label}: repeated node names in ops.csv")
        for r in mine:
            meas, pred, e = float(r["measured_us"]), float(r["predicted_us"]), float(r["error"])
            if meas <= 0 or pred <= 0 or int(r["instances"]) < 1:
                failures.append(f"{label} {r['node']}: non-positive time or instances: {r}")
            elif abs(pred / meas - 1 - e) > 2e-3 * pred / meas:
                failures.append(f"{label} {r['node']}: error {e} but {pred}/{meas} - 1 = {pred / meas - 1}")
    for r in rows(os.path.join(res, "models.csv")):
        errs = [abs(float(o["error"])) for o in ops if o["model"] == r["model"]]
        if not errs or abs(statistics.median(errs) - float(r["median_abs_error"])) > 1e-5 or \
                abs(max(errs) - float(r["worst_abs_error"])) > 1e-5:
            failures.append(f"models.csv {r['model']}: median/worst differ from ops.csv's {errs[:5]}")
        spreads = [float(o["round_spread"]) for o in ops if o["model"] == r["model"]]
        if any(x < 0 for x in spreads) or not spreads or \
                abs(statistics.median(spreads) - float(r["round_spread"])) > 1e-5:
            failures.append(f"models.csv {r['model']}: round spread {r['round_spread']} is not the median of "
                            f"ops.csv's non-negative spreads {spreads[:5]}")
        if float(r["whole_measured_ms"]) <= 0 or float(r["whole_predicted_ms"]) <= 0:
            failures.append(f"models.csv {r['model']}: whole-graph times missing")
        if r["target"] != ("1" if r["model"] == "squeezenet batch 1" else "0"):
            failures.append(f"models.csv {r['model']}: target {r['target']}")
    params = json.load(open(os.path.join(res, "cost_params.json")))
    if params.get("device") != "host-cpu" or params.get("fit", {}).get("quick") is not True:
        failures.append(f"cost_params.json is not the quick fit on host-cpu: {str(params)[:200]}")
    sq = next((r for r in rows(os.path.join(res, "models.csv")) if r["model"] == "squeezenet batch 1"), None)
    target = "Per-operator median |error| <= 15% on the zoo CNNs and BERT-base: **"
    if target not in summary or "Top-1 >= 80% of models and always top-3: not evaluated" not in summary:
        failures.append("the summary does not state the targets")
    elif sq:
        met = float(sq["median_abs_error"]) <= 0.15
        if f"{target}{'met' if met else 'not met'}**" not in summary:
            failures.append(f"target verdict wrong for squeezenet median {sq['median_abs_error']}")
        if f"squeezenet batch 1 {100 * float(sq['median_abs_error']):.1f}%" not in summary:
            failures.append("the summary does not give squeezenet's median error")
    if "fitted in this run (quick calibration suite)" not in summary or "OMP_NUM_THREADS=1" not in summary:
        failures.append("the summary does not say the parameters' origin and the threads")

    # 3. given parameters, with the optimizers' candidates
    params_file = os.path.join(tmp, "params.json")
    write(params_file, open(os.path.join(res, "cost_params.json")).read())
    exp2 = os.path.join(tmp, "graphs.yaml")
    write(exp2, config(f"cost_params: {params_file}\nmodels:\n  - {{model: \"{TINY}\"}}\nrepeat: 2\n"
                       "warmup: 1\ngraphs: {sample: 2, path_steps: 2, repeat: 2, node_repeat: 2, warmup: 1}\n")
          .replace("experiment: tiny", "experiment: tinyg"))
    rc, out, err = run("run", exp2, "--output", out_dir, "--no-plots")
    res2 = os.path.join(out_dir, "tinyg")
    if rc != 0:
        failures.append(f"graphs run failed: exit {rc}, {err[-500:]!r}")
    else:
        again = json.load(open(os.path.join(res2, "cost_params.json")))
        if again.get("kinds") != params.get("kinds") or again.get("ops") != params.get("ops"):
            failures.append("cost_params.json differs from the file given")
        cands = rows(os.path.join(res2, "graphs.csv"))
        stats = rows(os.path.join(res2, "graph_stats.csv"))
        if not cands or not cands[0]["candidate"].startswith("original") or len(stats) != 1:
            failures.append(f"graphs.csv / graph_stats.csv malformed: {len(cands)} rows, {len(stats)} stats")
        else:
            if any(c["equivalent"] != "1" for c in cands):
                failures.append("a candidate is not equivalent")
            pred = [float(c["predicted_ms"]) for c in cands]
            meas = [float(c["measured_ms"]) for c in cands]
            noise = statistics.median(float(c["spread"]) for c in cands)
            best_pred = [i for i, p in enumerate(pred) if p == min(pred)]
            top1 = any(meas[i] <= min(meas) * (1 + noise) for i in best_pred)
            regret = statistics.mean(meas[i] for i in best_pred) / min(meas)
            s = stats[0]
            if int(s["candidates"]) != len(cands) or int(s["top1"]) != int(top1) or \
                    abs(float(s["regret"]) - regret) > 1e-3:
                failures.append(f"graph_stats {s} vs recomputed top-1 {top1}, regret {regret}")
        summary2 = open(os.path.join(res2, "summary.md")).read()
        if f"Cost parameters: {params_file}" not in summary2 or "always top-3: **" not in summary2:
            failures.append("graphs summary lacks the parameters' origin or the ranking targets")

    # 4. hw: measure: this CPU measured in the run (strata validate host) prices the grid; host.yaml is the
    # measured system file, and the summary's figures are its figures. The GPU kind refuses it by name.
    exp3 = os.path.join(tmp, "measured.yaml")
    write(exp3, f"experiment: measured\nkind: cpu-validation\nhw: measure\nmodels:\n  - {{model: \"{TINY}\"}}\n"
                "repeat: 2\nwarmup: 1\n")
    rc, out, err = run("run", exp3, "--output", out_dir, "--no-plots")
    res3 = os.path.join(out_dir, "measured")
    if rc != 0 or not os.path.exists(os.path.join(res3, "host.yaml")):
        failures.append(f"hw: measure run failed or wrote no host.yaml: exit {rc}, {err[-500:]!r}")
    else:
        host = open(os.path.join(res3, "host.yaml")).read()
        peak = re.search(r"peak:\s*\{fp32:\s*([\d.]+)\s*(GFLOPS|TFLOPS)", host)
        summary3 = open(os.path.join(res3, "summary.md")).read()
        shown = re.search(r"\(([\d.]+) GFLOP/s fp32", summary3)
        if not peak or not shown:
            failures.append(f"host.yaml or the summary lacks the fp32 peak: {host[:300]!r}")
        else:
            gflops = float(peak.group(1)) * (1000 if peak.group(2) == "TFLOPS" else 1)
            if abs(gflops - float(shown.group(1))) > 0.051 * max(1.0, gflops / 1000):
                failures.append(f"summary prices at {shown.group(1)} GFLOP/s, host.yaml measured {gflops}")
        if "measured in the run" not in summary3:
            failures.append("the summary does not say the device spec was measured in the run")
    bad = os.path.join(tmp, "gpu_measure.yaml")
    text = "experiment: g\nkind: gpu-validation\nhw: measure\nmodels: [{model: squeezenet}]\n"
    write(bad, text)
    rc, out, err = run("run", bad, "--output", os.path.join(tmp, "never"))
    if rc != 2 or f"{bad}:3:" not in err or "validate host" not in err:
        failures.append(f"gpu-validation with hw: measure: expected exit 2 naming line 3; got {rc}, {err!r}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)" if failures else "cpu-validation end-to-end checks passed")
sys.exit(1 if failures else 0)
