#!/usr/bin/env python3
"""scripts/fatbin_archs.py - which GPU architectures an executable carries: the SASS (sm_XX machine code) and PTX
(compute_XX) entries of its .nv_fatbin section, read without cuobjdump (this machine's toolkit has none).

    scripts/fatbin_archs.py FILE...                 one line per file: FILE  sass sm_80,sm_90  ptx compute_80,compute_90
    scripts/fatbin_archs.py --require 90 FILE...    exit 1 (naming the file) unless each holds sm_90 SASS and compute_90 PTX

The section holds fat binary containers (magic 0xBA55ED50; a 16-byte header whose u64 at offset 8 is the size of the
entries that follow), each a run of entries: u16 kind (1 PTX, 2 ELF cubin) at offset 0, u32 header size at 4, u64
payload size at 8, u32 architecture (90 = sm_90) at 28; the next entry starts header size + payload size later.
The layout was checked against nvcc 13.0's output for CMake's "90;80" (SASS and PTX for both); where cuobjdump exists,
`cuobjdump --list-elf --list-ptx FILE` says the same. What it is not: a disassembler.
"""
import struct
import sys

MAGIC = 0xBA55ED50


def section(data, name):
    """The bytes of ELF64 section `name`, or None."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = header(shstrndx)
    names = data[strtab[4]:strtab[4] + strtab[5]]
    for i in range(shnum):
        h = header(i)
        n = names[h[0]:names.index(b"\0", h[0])].decode()
        if n == name:
            return data[h[4]:h[4] + h[5]]
    return None


def archs(path):
    """({sm numbers with SASS}, {sm numbers with PTX}) of the file's fat binaries."""
    data = open(path, "rb").read()
    fat = section(data, ".nv_fatbin")
    sass, ptx = set(), set()
    if fat is None:
        return sass, ptx
    pos = 0
    while pos + 16 <= len(fat):
        magic, _, hsize, size = struct.unpack_from("<IHHQ", fat, pos)
        if magic != MAGIC:  # containers are 8-byte aligned; skip padding between them
            pos += 8
            continue
        e, end = pos + hsize, pos + hsize + size
        while e + 32 <= end:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", fat, e)
            arch, = struct.unpack_from("<I", fat, e + 28)
            if ehsize == 0:
                break
            (ptx if kind == 1 else sass).add(arch)
            e += ehsize + psize
        pos = end
    return sass, ptx


def main(argv):
    require = None
    if len(argv) >= 2 and argv[0] == "--require":
        require, argv = int(argv[1]), argv[2:]
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    bad = 0
    for f in argv:
        sass, ptx = archs(f)
        print(f"{f}  sass {','.join(f'sm_{a}' for a in sorted(sass)) or '-'}  "
              f"ptx {','.join(f'compute_{a}' for a in sorted(ptx)) or '-'}")
        if require is not None and (require not in sass or require not in ptx):
            print(f"fatbin_archs: {f} lacks {'sm_%d SASS' % require if require not in sass else ''}"
                  f"{' and ' if require not in sass and require not in ptx else ''}"
                  f"{'compute_%d PTX' % require if require not in ptx else ''} (found sass {sorted(sass)}, "
                  f"ptx {sorted(ptx)}): rebuild with DL_CUDA_ARCHS including {require}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
