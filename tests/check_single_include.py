#!/usr/bin/env python3
"""single_include/ as a program uses it: every generated file compiles on its own, and all of them
compile together in one translation unit, included in name order and in reverse. The generated
files paste code without include guards of its own, so a header pasted into two of them is defined
twice in a program that includes both (failure_of.hpp, under the MPI front end and the benchmark,
broke the sanitizer build this way); scripts/amalgamate.py gives such a header a file of its own,
and this is the check that it did. A file whose third-party library (MPI, CBC, NCCL) is missing
here is reported as skipped and left out of the combined unit.

Usage: check_single_include.py SINGLE_INCLUDE_DIR CXX [FLAG...]
Exit 0 when every check holds; else 1, one line per fault.
"""
import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys
import tempfile

# g++: "fatal error: mpi.h: No such file or directory"; clang: "fatal error: 'mpi.h' file not found"
FORWARDING = re.compile(r"\A(//[^\n]*\n)*#pragma once\n#include <[^>]+>\n\Z")
MISSING = re.compile(r"fatal error: (?:'([^']+)' file not found|([^:]+): No such file or directory)")


def syntax_only(root, command, names):
    """Compiles a file that includes <names...> in that order: (exit status, first error line)."""
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write("".join(f"#include <{n}>\n" for n in names))
        source = f.name
    try:
        r = subprocess.run(command + ["-fsyntax-only", "-I", str(root), source], capture_output=True, text=True)
    finally:
        os.unlink(source)
    first = next((l for l in r.stderr.splitlines() if "error" in l), r.stderr.strip()[:300])
    return r.returncode, first


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    command = argv[2:]
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.hpp"))
    if not names:
        print(f"no generated headers under {root}")
        return 1
    faults, skipped, usable = [], [], []

    def alone(name):
        # A forwarding file (the layered path of a header whose code another file holds) is one
        # include line: compiled in the combined unit, not on its own.
        if FORWARDING.search((root / name).read_text()):
            return name, (0, "")
        return name, syntax_only(root, command, [name])

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for name, (status, first) in pool.map(alone, names):
            missing = MISSING.search(first) if status else None
            absent = (missing.group(1) or missing.group(2)) if missing else None
            if absent and not absent.startswith("meshcast/"):
                skipped.append(f"{name} (needs <{absent}>)")
            elif status:
                faults.append(f"{name}: does not compile on its own: {first}")
            else:
                usable.append(name)
    for order, listed in (("name order", usable), ("reverse name order", usable[::-1])):
        status, first = syntax_only(root, command, listed)
        if status:
            faults.append(f"the {len(listed)} files together, in {order}, do not compile: {first}")
    for s in skipped:
        print(f"skipped, a third-party header is missing here: {s}")
    for f in faults:
        print(f)
    print(f"check_single_include: {len(names)} files, {len(usable)} compiled alone and together"
          + (f": {len(faults)} faults" if faults else ": every check holds"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
