#!/usr/bin/env python3
"""scripts/compiler_probe.py - probe a C++ compiler and flags for the vector-constant miscompilation of GCC 12.

GCC 12.2 (Debian 12) with AVX-512 code generation builds some constants wrongly: a vector of N lanes whose first
k lanes hold x and whose other lanes are 0 ({1, 1, 0, 0} as four int64) is emitted as a broadcast of x over a wider
register ({1, 1, 1, 1}). This script writes one program with a function per (element type, length, lane pattern,
constant or run-time x), each building a std::vector from the braced list and comparing it with the same values
copied from a plain array, compiles it with the given compiler and flags, runs it and prints how many were wrong.

    python3 scripts/compiler_probe.py                       # g++ with the flags the project's build uses
    python3 scripts/compiler_probe.py --cxx clang++ --flags "-O2 -march=native"
    python3 scripts/compiler_probe.py --flags "-O2 -march=native -fno-tree-slp-vectorize"

Measured on this machine's AMD EPYC (2026-12-01, 1524 cases): g++ 12.2 -O2 -march=native: 36 wrong (int64 and
double {x,x,0,0}, {x,x,x,0}; float and int32 {x,x,x,x,0,0,0,0}; ...); with -fno-tree-slp-vectorize still 4 wrong
(int8 x 32); with -mno-avx512vl 36; with -mno-avx512f 0; clang++ 14 -O2/-O3 -march=native 0.
tests/tensor/test_compiler.cpp keeps a representative case of each failing family in the test suite.
"""
import argparse
import os
import subprocess
import sys
import tempfile

TYPES = ["int64_t", "double", "int32_t", "float", "int16_t", "int8_t"]
LENGTHS = [2, 4, 8, 16, 32]


def patterns(n):
    """The lane patterns probed: x then zeros, zeros then x, alternating x/0, two values repeated, x y then zeros."""
    out = set()
    for k in range(1, n):
        out.add("x" * k + "0" * (n - k))
        out.add("0" * k + "x" * (n - k))
    out.add(("x0" * n)[:n])
    out.add("xy" * (n // 2))
    out.add("xy" + "0" * (n - 2))
    return sorted(out)


def program():
    lines = ["#include <cstdint>", "#include <cstdio>", "#include <vector>", "volatile long g_x = 3;",
             "int wrong = 0, total = 0;",
             "template <class T> __attribute__((noinline)) void check(const std::vector<T>& v, const T* want, int n,",
             "                                                        const char* what) {",
             "  total++;",
             "  for (int i = 0; i < n; i++)",
             "    if (v[i] != want[i]) { wrong++; std::printf(\"wrong: %s\\n\", what); return; }",
             "}"]
    calls = []
    for t in TYPES:
        for n in LENGTHS:
            for p in patterns(n):
                for mode in ("constant", "runtime"):
                    x, y = ("1", "2") if mode == "constant" else (f"({t})g_x", f"({t})(g_x + 1)")
                    wx, wy = ("1", "2") if mode == "constant" else ("3", "4")
                    lanes = ", ".join({"x": x, "y": y, "0": "0"}[c] for c in p)
                    want = ", ".join({"x": wx, "y": wy, "0": "0"}[c] for c in p)
                    f = f"f{len(calls)}"
                    lines.append(f"__attribute__((noinline)) void {f}() {{ std::vector<{t}> v{{{lanes}}}; "
                                 f"const {t} w[] = {{{want}}}; check(v, w, {n}, \"{t} x {n} {p} {mode}\"); }}")
                    calls.append(f + "();")
    lines.append("int main() { " + " ".join(calls) +
                 " std::printf(\"%d wrong of %d\\n\", wrong, total); return wrong != 0; }")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--flags", default="-O2 -march=native -mno-avx512f")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "probe.cpp"), os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write(program())
        subprocess.run([args.cxx, *args.flags.split(), src, "-o", exe], check=True)
        run = subprocess.run([exe], capture_output=True, text=True)
        print(run.stdout, end="")
        print(f"{args.cxx} {args.flags}: " + run.stdout.strip().splitlines()[-1])
        return run.returncode


if __name__ == "__main__":
    sys.exit(main())
