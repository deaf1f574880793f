#!/usr/bin/env python3
"""README.md and docs/ stay what the issues made them (a cut once moved contract content out of
README unnoticed):

- README.md is at most 250 lines (issue 22) and still carries what earlier issues put there: the
  spec notation with a picture of one layout (2), the benchmark program and its command (21), bad
  input and limits (7), mpiexec -n 20 and the host-file command (4), what TCP users must set (8,
  19), the measured tables: plan construction (2), the solver suite beside Alpa's (3), the cluster
  suite (8), pipeline policies (10), the auto-sharding ILP (11); the install and the one call (9).
- Every relative link of README.md and docs/*.md names a file of the repository, and every
  #anchor a heading of its page (GitHub's slugs).

Usage: check_readme.py [REPO_ROOT]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
failures = []
readme = (root / "README.md").read_text()
lines = readme.splitlines()
if len(lines) > 250:
    failures.append(f"README.md has {len(lines)} lines, more than 250")

required = {
    "## Install": "the install section (issue 9, package.readme_install)",
    "## Use it in your code": "the one call (issue 9)",
    "meshcast::reshard(comm": "the one call's example (issue 9)",
    "## Notation": "the spec notation (issue 2)",
    "dev0 rows 0-3": "the picture of one layout (issue 2)",
    "meshcast::benchmark_session session(argc, argv);": "the benchmark program (issue 21)",
    "mpiexec -n 4 ./app --benchmark_format=json": "the benchmark's command (issue 21)",
    "## Bad input and limits": "the bad input paragraph (issue 7)",
    "mpiexec -n 20 build/test/examples/meshcast-reshard": "meshcast-reshard on 20 ranks (issue 4)",
    "mpiexec -f hosts.txt": "the run across hosts (issue 4)",
    "UCX_TLS=tcp,self": "what TCP users must set (issue 8)",
    "UCX_ZCOPY_THRESH=inf": "the zero-copy setting TCP users must set (issue 19)",
    "## Move a whole model": "the whole-model section (issue 20)",
    "plan construction": "the plan construction figures (issue 2)",
    "solver suite": "the solver suite beside Alpa's (issue 3)",
    "364 runs": "the cluster suite's summary (issue 8)",
    "list_scheduling": "the pipeline policies' figures (issue 10)",
    "24-layer transformer": "the auto-sharding ILP's size and solve time (issue 11)",
    "bash scripts/example.sh": "the first of the two commands",
    "bash scripts/test.sh": "the test command (CI's first stage)",
}
for needle, what in required.items():
    if needle not in readme:
        failures.append(f"README.md lacks {what}: no '{needle}'")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    found, seen = set(), {}
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        m = re.match(r"^(#{1,6})\s+(.*)$", line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            found.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return found


pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
links = 0
for page in pages:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue  # http:, https:, mailto:
        links += 1
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(root)}: link '{target}'"
        if not dest.exists():
            failures.append(f"{where} names no file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            failures.append(f"{where}: {dest.name} has no heading with that anchor")

for f in failures:
    print("FAIL:", f)
print(f"check_readme: README {len(lines)} lines, {len(required)} contract items, {links} links in {len(pages)} pages: "
      + ("all hold" if not failures else f"{len(failures)} failures"))
sys.exit(1 if failures else 0)
