#!/usr/bin/env python3
"""scripts/gpu_check_report.py - the lines scripts/gpu_check.sh writes into its summary, from the files its steps left.

    gpu_check_report.py smoke SMOKE_TSV          counts, and every item that did not pass
    gpu_check_report.py tests RESULTS_TSV        per binary: counts by status; every test not passed or skipped
    gpu_check_report.py bench BENCH_JSONL        ours beside PyTorch per workload: ms, tokens/s, model TFLOP/s, MFU
    gpu_check_report.py cell NAME RESULT_JSON REF_DIR   one device cell against its CPU reference; prints a TSV row
                                                 (name, steps/s, cpu steps/s, max |dloss| / |loss|, verdict, ...)

MFU is model FLOP/s (bench_workloads.cpp's FLOP model, the same on both sides) over the dense peaks from the datasheet,
which are the same for both kinds of machine the device tool lends (the H100 SXM and the H200 are one chip, GH100, at
the same clocks; they differ in memory): 67 TFLOP/s plain FP32 (what both sides compute in: cuBLAS and PyTorch default
to no TF32 for matmuls), 495 TF32, 989 BF16 (KINDS.md measured 769-798 bf16 on random data on either).
"""
import json
import math
import os
import sys

PEAKS = {"fp32": 67e12, "tf32": 495e12, "bf16": 989e12}
CURVE_TOL = 2e-2  # relative difference of a logged loss: float sums in another order, 20 Adam steps


def rows(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        lines = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    return lines[1:] if lines and lines[0][0] in ("item", "binary") else lines


def smoke(path):
    r = rows(path)
    if not r:
        print("  smoke: no results (did gpu_smoke start? see logs/smoke.log)")
        return
    count = {}
    for x in r:
        count[x[1]] = count.get(x[1], 0) + 1
    print("  smoke: " + ", ".join(f"{count.get(k, 0)} {k.lower()}" for k in ("PASS", "FAIL", "SKIP")) + f" of {len(r)} items")
    fails = [x for x in r if x[1] == "FAIL"]
    for x in fails[:15]:
        print(f"    FAIL {x[0]}: max_err {x[2]} tol {x[3]} {x[5][:200]}")
    if len(fails) > 15:
        print(f"    ... and {len(fails) - 15} more (smoke.tsv)")
    for x in r:  # timings (speed.*): their detail is the figure
        if x[0].startswith("speed.") and x[1] == "PASS":
            print(f"    {x[0]}: {x[5][:300]}")
    skips = {x[5] for x in r if x[1] == "SKIP"}
    for s in sorted(skips)[:3]:
        print(f"    SKIP reason: {s[:200]}")


def tests(path):
    r = rows(path)
    if not r:
        print("  tests: no results")
        return
    by_bin = {}
    for x in r:
        by_bin.setdefault(x[0], {}).setdefault(x[2], []).append(x)
    for b, st in by_bin.items():
        print(f"  {b}: " + ", ".join(f"{len(v)} {k}" for k, v in sorted(st.items())))
    bad = [x for x in r if x[2] not in ("passed", "skipped")]
    for x in bad[:40]:
        rerun = f"; rerun: {x[4]}" if len(x) > 4 and x[4] else ""
        note = f"; {x[5]}" if len(x) > 5 and x[5] else ""
        print(f"    {x[2].upper()} {x[0]} {x[1]}{rerun}{note}")
    if len(bad) > 40:
        print(f"    ... and {len(bad) - 40} more (results.tsv)")


def bench(path):
    if not os.path.exists(path):
        print("  bench: no results")
        return
    got = {}
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        w = r.get("workload")  # a bf16 run is its own row: "gpt_char bf16" (ours --precision bf16 beside autocast)
        if r.get("precision", "fp32") != "fp32":
            w = f"{w} {r['precision']}"
        got[(w, r.get("variant"))] = r
    names = sorted({w for w, _ in got})
    print("  | workload | len x batch | ours ms | torch ms | ours tok/s | torch tok/s | ours/torch tok/s | ours TFLOP/s | "
          "torch TFLOP/s | ours MFU fp32 / tf32 / bf16 |")
    for w in names:
        o, t = got.get((w, "ours"), {}), got.get((w, "torch"), {})
        ref = o or t
        def f(r, k, fmt="{:.1f}"):
            return fmt.format(r[k]) if r.get(k) is not None else ("failed" if r.get("failed") else "-")
        ratio = (o["tokens_per_s"] / t["tokens_per_s"]) if o.get("tokens_per_s") and t.get("tokens_per_s") else None
        tf = lambda r: (r["gflops"] / 1e3) if r.get("gflops") else None
        mfu = (" / ".join(f"{100 * tf(o) * 1e12 / PEAKS[p]:.2f}%" for p in ("fp32", "tf32", "bf16"))) if tf(o) else "-"
        print(f"  | {w} | {ref.get('len', '?')} x {ref.get('batch', '?')} | {f(o, 'ms_per_step')} | {f(t, 'ms_per_step')} | "
              f"{f(o, 'tokens_per_s', '{:.0f}')} | {f(t, 'tokens_per_s', '{:.0f}')} | "
              f"{'%.2fx' % ratio if ratio else '-'} | {'%.2f' % tf(o) if tf(o) else '-'} | {'%.2f' % tf(t) if tf(t) else '-'} | {mfu} |")
    for (w, v), r in sorted(got.items()):
        if r.get("failed"):
            print(f"    {v} {w} failed: {r.get('error', '')[:200]}")


def curve(path):
    """(the result, {(phase, step): (train_loss, val_loss)}) of a result.json: every logged point of every phase."""
    r = json.load(open(path))
    return r, {(c.get("phase"), c["step"]): (c.get("train_loss"), c.get("val_loss")) for c in r.get("curve", [])}


def rel(a, b):
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return None
    return abs(a - b) / max(1.0, abs(b))


def cell(name, result, ref_dir):
    """One TSV row: name, steps_per_s, cpu_steps_per_s, max_rel_train, max_rel_val, val_acc, cpu_val_acc, verdict."""
    r, gpu = curve(result)
    ref_path = os.path.join(ref_dir, "result.json")
    m = r.get("metrics", {})
    if not os.path.exists(ref_path):
        print(f"{name}\t{r.get('steps_per_s', 0):.2f}\t\t\t\t{m.get('val_acc')}\t\tno CPU reference in the bundle")
        return
    c, cpu = curve(ref_path)
    dt = [rel(gpu[s][0], cpu[s][0]) for s in cpu if s in gpu]
    dv = [rel(gpu[s][1], cpu[s][1]) for s in cpu if s in gpu]
    dt, dv = [x for x in dt if x is not None], [x for x in dv if x is not None]
    worst = max(dt + dv) if dt + dv else None
    missing = sorted(f"{p} {s}" for p, s in set(cpu) - set(gpu))
    verdict = ("no common logged step" if worst is None else
               f"close (<= {CURVE_TOL:g})" if worst <= CURVE_TOL and not missing else
               f"steps {missing} missing" if missing else f"DIVERGED (> {CURVE_TOL:g})")
    g = lambda d, k: "" if d.get(k) is None else f"{d[k]:.4g}"
    e = lambda v: f"{max(v):.2g}" if v else "-"
    print(f"{name}\t{r.get('steps_per_s', 0):.2f}\t{c.get('steps_per_s', 0):.2f}\t{e(dt)}\t{e(dv)}\t"
          f"{g(m, 'val_acc')}\t{g(c.get('metrics', {}), 'val_acc')}\t{verdict}")


def main(argv):
    if len(argv) >= 2 and argv[0] in ("smoke", "tests", "bench"):
        {"smoke": smoke, "tests": tests, "bench": bench}[argv[0]](argv[1])
    elif len(argv) == 4 and argv[0] == "cell":
        cell(*argv[1:])
    else:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
