#!/usr/bin/env python3
"""scripts/gpu_tests.py - run one GTest binary on the GPU machine so that no test's failure takes others with it; one
row per test in a TSV. scripts/gpu_check.sh calls it once per binary.

    gpu_tests.py --bin PATH --filter F --budget SECONDS --logs DIR --tsv FILE [--sanitizer PATH] [--max-isolated N]

1. The binary lists its tests (--gtest_list_tests with the filter), then runs them in one process. Its output is read
   as it streams ("[ RUN      ] T", then "[       OK ] T (12 ms)", FAILED or SKIPPED), so a crash or a timeout still
   leaves the results of the tests before it. The test that was running is recorded as crashed (or timeout) and the
   tests not yet reported run on in a fresh process, until every test has a status or the budget is spent (those left
   are "not-run").
2. Failures are rerun with CUDA_LAUNCH_BLOCKING=1 (a fault then surfaces in the call that made it): the first failure
   alone in its own process, the others together in a fresh one; a test that passes then had failed only after an
   earlier test's error (a sticky CUDA error poisons the process) and gets rerun "passed"; repeated until each failure
   is rerun. A test that failed alone, crashed or timed out is then run alone under `compute-sanitizer --tool memcheck`
   (at most --max-isolated of them, each capped) and the sanitizer's error summary recorded.
Columns: binary, test, status (passed / failed / skipped / crashed / timeout / not-run), seconds, rerun (the status
alone or in the fresh process with CUDA_LAUNCH_BLOCKING=1; empty when not rerun), note (a crash's exit status,
compute-sanitizer's "ERROR SUMMARY" line). gpu_check.sh writes the header row.
Every process's output is kept in --logs. Exit status 0 unless the runner itself broke (test failures are rows).
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

RUN = re.compile(r"^\[ RUN      \] (\S+)")
END = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+) \((\d+) ms\)")
STATUS = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}


def list_tests(exe, gfilter, logs):
    """The test names the filter selects, in run order (Suite.Name; parameterised ones as Suite/P.Name/0)."""
    out = subprocess.run([exe, "--gtest_list_tests", "--gtest_filter=" + gfilter], capture_output=True, text=True,
                         timeout=120)
    with open(os.path.join(logs, os.path.basename(exe) + ".list"), "w") as f:
        f.write(out.stdout + out.stderr)
    names, suite = [], None
    for line in out.stdout.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    if out.returncode != 0 and not names:  # a list followed by a crash at exit still names the tests: the run shows it
        raise RuntimeError(f"{exe} --gtest_list_tests exited {out.returncode}: {(out.stderr or out.stdout)[-400:]}")
    return names


def run_process(cmd, log_path, timeout, env=None, stall=60.0):
    """Runs cmd (its own process group, killed whole) with output to log_path, read line by line as it streams (a
    reader thread). Killed at `timeout`, or when it prints nothing for `stall` seconds (one test hangs: the budget
    stays for the others). Returns (exit status or 'timeout', {test: (status, seconds)}, the test running at the end)."""
    results, state = {}, {"running": None, "last": time.monotonic()}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", env=env,
                         start_new_session=True)

    def read(log):
        for line in p.stdout:
            state["last"] = time.monotonic()
            log.write(line)
            m = RUN.match(line)
            if m:
                state["running"] = m.group(1)
                continue
            m = END.match(line)
            if m and m.group(2) == state["running"]:
                results[m.group(2)] = (STATUS[m.group(1)], int(m.group(3)) / 1000.0)
                state["running"] = None

    t_end = time.monotonic() + timeout
    with open(log_path, "w") as log:
        reader = threading.Thread(target=read, args=(log,), daemon=True)
        reader.start()
        rc, why = None, ""
        while rc is None:
            try:
                rc = p.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if now > t_end or now - state["last"] > stall:
                    why = f"no output for {now - state['last']:.0f} s" if now <= t_end else f"out of its {timeout:.0f} s"
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    rc = "timeout"
        reader.join(timeout=10)
        if why:
            log.write(f"\n[gpu_tests: killed: {why}]\n")
    return rc, results, state["running"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--filter", default="*")
    ap.add_argument("--budget", type=float, required=True)
    ap.add_argument("--logs", required=True)
    ap.add_argument("--tsv", required=True)
    ap.add_argument("--sanitizer", default="")
    ap.add_argument("--max-isolated", type=int, default=4)
    ap.add_argument("--stall", type=float, default=60.0, help="kill a process silent this long (a hung test)")
    a = ap.parse_args()
    t_end = time.monotonic() + a.budget
    left = lambda: t_end - time.monotonic()
    name = os.path.basename(a.bin)
    rows = {}  # test -> [status, seconds, rerun, memcheck]
    try:
        tests = list_tests(a.bin, a.filter, a.logs)
    except Exception as e:  # the binary does not start, or does not list: one row says so
        with open(a.tsv, "a") as f:
            f.write(f"{name}\t(all)\tcrashed\t0\t\t{str(e)[:300]}\n")
        print(f"gpu_tests: {name}: {e}", file=sys.stderr)
        return 0

    # 1. run; after a crash or a timeout, the tests not yet reported in a fresh process
    remaining, n, extra = list(tests), 0, []
    while remaining and left() > 5:
        n += 1
        gfilter = a.filter if n == 1 else ":".join(remaining)
        rc, res, running = run_process([a.bin, "--gtest_filter=" + gfilter],
                                       os.path.join(a.logs, f"{name}.run{n}.log"), left(), stall=a.stall)
        for t, (st, s) in res.items():
            rows[t] = [st, s, "", ""]
        if running:
            rows[running] = ["timeout" if rc == "timeout" else "crashed", 0.0, "", f"exit {rc}"]
        elif rc not in (0, 1) and all(t in rows for t in remaining):  # every test reported, then a crash (teardown)
            extra.append(f"{name}\t(process, run {n})\tcrashed\t0.000\t\texit {rc} after every test had reported")
        before = len(remaining)
        remaining = [t for t in remaining if t not in rows]
        if rc == 0 or len(remaining) == before:  # finished, or no progress (the binary dies before any test)
            break
    for t in remaining:
        rows[t] = ["not-run", 0.0, "", "no time left" if left() <= 5 else "the process ended before it"]

    # 2. failures (and crashes, timeouts) rerun with CUDA_LAUNCH_BLOCKING=1: the first alone, the rest together in a
    #    fresh process; what fails again there, or is not reached, goes round again (each round isolates one)
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING="1")
    queue = [t for t in tests if rows[t][0] in ("failed", "crashed", "timeout")]
    alone_failures, k = [], 0
    while queue and left() > 10:
        k += 1
        first, rest = queue[0], queue[1:]
        rc, res, running = run_process([a.bin, "--gtest_filter=" + first], os.path.join(a.logs, f"{name}.rerun{k}a.log"),
                                       min(left(), 120), env, a.stall)
        st = res[first][0] if first in res else ("timeout" if rc == "timeout" else "crashed")
        rows[first][2] = st + " alone"
        if st not in ("passed", "skipped"):
            alone_failures.append(first)
        queue = []
        if rest and left() > 10:
            rc, res, running = run_process([a.bin, "--gtest_filter=" + ":".join(rest)],
                                           os.path.join(a.logs, f"{name}.rerun{k}b.log"), left(), env, a.stall)
            for t in rest:
                if t in res and res[t][0] != "failed":
                    rows[t][2] = res[t][0] + " on rerun"
                else:
                    queue.append(t)
        else:
            queue = rest
    # 3. memcheck on what failed alone, crashed or timed out
    suspects = alone_failures
    if a.sanitizer and os.access(a.sanitizer, os.X_OK):
        for i, t in enumerate(suspects[: a.max_isolated]):
            if left() < 20:
                break
            log = os.path.join(a.logs, f"{name}.memcheck{i + 1}.log")
            rc, res, running = run_process([a.sanitizer, "--tool", "memcheck", "--error-exitcode", "99", a.bin,
                                            "--gtest_filter=" + t], log, min(left() - 10, 150), stall=120)
            summary = next((l.strip() for l in open(log, errors="replace") if "ERROR SUMMARY" in l), f"no summary (exit {rc})")
            rows[t][3] = (rows[t][3] + "; " if rows[t][3] else "") + summary
    with open(a.tsv, "a") as f:
        for t in tests:
            st, s, rerun, note = rows[t]
            f.write(f"{name}\t{t}\t{st}\t{s:.3f}\t{rerun}\t{note}\n")
        for row in extra:
            f.write(row + "\n")
    counts = {}
    for t in tests:
        counts[rows[t][0]] = counts.get(rows[t][0], 0) + 1
    print(f"{name}: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" ({len(tests)} tests, {n} run(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
