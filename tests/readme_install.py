#!/usr/bin/env python3
"""Runs README.md's install commands as written (the indented `cmake` lines of its "## Install"
section) on a fresh build folder, then builds a program against the installed package: the
header-only target, and the compiled mode where the package has it. package.install installs the
test build, which has everything built already; this checks the sequence a user types.

Usage: readme_install.py SOURCE_DIR WORK_DIR CXX EXPECT_COMPILED
README's "build" becomes WORK_DIR/build and its prefix WORK_DIR/prefix; nothing else changes.
EXPECT_COMPILED (1 or 0): whether the build that registered this test has meshcast::compiled
(MPI found); with 1 the installed package must have it too.
"""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

root = pathlib.Path(sys.argv[1]).resolve()
work = pathlib.Path(sys.argv[2]).resolve()
cxx = sys.argv[3]
expect_compiled = sys.argv[4] == "1"


def install_commands(readme):
    """The indented command lines of the Install section, in order."""
    section = re.search(r"^## Install\n(.*?)^## ", readme, re.S | re.M)
    if not section:
        sys.exit("README.md has no '## Install' section")
    lines = [l.strip() for l in section.group(1).splitlines() if l.startswith("    cmake ")]
    if not lines:
        sys.exit("README.md's Install section has no indented cmake command")
    return lines


def rewrite(argv, prefix):
    """README's paths, moved into the work folder: -S . is the source, build the build folder."""
    out = []
    for i, a in enumerate(argv):
        before = argv[i - 1] if i else ""
        if before == "-S" and a == ".":
            a = str(root)
        elif before in ("-B", "--build", "--install") and a == "build":
            a = str(work / "build")
        elif before == "--prefix":
            a = str(prefix)
        elif (before in ("-S", "-B", "--build", "--install") or a.startswith(("--prefix=", "-DCMAKE_INSTALL_PREFIX"))
              or (a[:2] in ("-S", "-B") and len(a) > 2)):
            # A form this rewrite does not know would build or install outside the work folder.
            sys.exit(f"README.md's install command has an argument this check cannot redirect: {a}")
        out.append(a)
    return out


def run(argv, **kw):
    print("$ " + shlex.join(argv), flush=True)
    subprocess.run(argv, check=True, **kw)


shutil.rmtree(work, ignore_errors=True)
work.mkdir(parents=True)
prefix = work / "prefix"
env = dict(os.environ, CXX=cxx)
commands = install_commands((root / "README.md").read_text())
for line in commands:
    run(rewrite(shlex.split(line, comments=True), prefix), cwd=root, env=env)
if not any("--install" in l for l in commands):
    sys.exit("README.md's Install section installs nothing (no cmake --install)")

config = prefix / "share/cmake/meshcast"
if not (config / "meshcastConfig.cmake").is_file():
    sys.exit(f"README's install put no meshcastConfig.cmake into {config}")
compiled = list(prefix.glob("lib*/libmeshcast.a"))
if expect_compiled and not compiled:
    sys.exit("README's install sequence installed no libmeshcast.a (the compiled mode), though MPI is found")

# tests/consumer (what package.consumer_* build against the test build's install), configured
# against this package: its header-only program, and its compiled-mode one where MPI is found.
consumer = work / "consumer"
compiled_nccl = list(prefix.glob("lib*/libmeshcast-nccl.a"))
targets = ["consumer"] + (["consumer_mpi_compiled"] if compiled else []) + (["consumer_nccl_compiled"] if compiled and compiled_nccl else [])
run(["cmake", "-S", str(root / "tests/consumer"), "-B", str(consumer), f"-Dmeshcast_DIR={config}"], env=env)
run(["cmake", "--build", str(consumer), "--target", *targets], env=env)
run([str(consumer / "consumer")])
if compiled and compiled_nccl:
    # A machine without CUDA keeps the MPI compiled mode of a package built with both (its config
    # once imported the compiled libraries only where MPI and CUDA were both found).
    no_cuda = work / "consumer_no_cuda"
    run(["cmake", "-S", str(root / "tests/consumer"), "-B", str(no_cuda), f"-Dmeshcast_DIR={config}",
         "-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON"], env=env)
    run(["cmake", "--build", str(no_cuda), "--target", "consumer_mpi_compiled"], env=env)
print(f"README's install sequence works; compiled mode {'installed and linked' if compiled else 'not built (no MPI)'}; "
      f"NCCL's compiled mode {'installed and linked' if compiled_nccl else 'not built (no CUDA and NCCL)'}")
