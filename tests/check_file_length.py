#!/usr/bin/env python3
"""No source file of the project is longer than 400 lines (docs/layering.md#habits): headers,
sources, tests, benchmarks, examples, scripts and build files. single_include/ is generated and
data (JSON, Markdown, images, CSV) is not code; build folders are not the project's.

Usage: check_file_length.py REPOSITORY_ROOT
Exit 0 when every file holds; else 1, one line per file past the limit.
"""
import pathlib
import sys

MAX_LINES = 400
FOLDERS = [".ci", "bench", "cmake", "examples", "include", "scripts", "src", "tests"]
SUFFIXES = {".hpp", ".cpp", ".h", ".c", ".cu", ".py", ".sh", ".cmake", ".in"}
NAMES = {"CMakeLists.txt", "meson.build", "meson_options.txt", "run"}


def sources(root):
    for name in NAMES:
        if (root / name).is_file():
            yield root / name
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and (path.suffix in SUFFIXES or path.name in NAMES) and "__pycache__" not in path.parts:
                yield path


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    checked, faults = 0, []
    for path in sources(root):
        checked += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_LINES:
            faults.append(f"{path.relative_to(root)}: {lines} lines, more than {MAX_LINES}: split it by concept")
    for f in faults:
        print(f)
    if checked == 0:
        print(f"check_file_length: no source file under {root}")
        return 1
    print(f"check_file_length: {checked} files" + (f": {len(faults)} past {MAX_LINES} lines" if faults else
                                                   f", none past {MAX_LINES} lines"))
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
