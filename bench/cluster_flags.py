"""What the emulated-cluster benchmarks share: where this checkout, its cluster script and its test
build are, and the flags every one of them takes. `--build` defaults to the checkout's build/test
whatever the working directory (three scripts once read it relative to the working directory)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.path.join(ROOT, "scripts", "cluster.sh")
BUILD = os.path.join(ROOT, "build", "test")


def add_cluster_flags(ap, mbit=200.0, hosts=None, ppn=None):
    """--build, --mbit (per-host NIC rate of the emulated cluster) and, where given a default,
    --hosts and --ppn (ranks per host)."""
    ap.add_argument("--build", default=BUILD, help=f"the build directory (default {BUILD})")
    ap.add_argument("--mbit", type=float, default=mbit, help=f"NIC rate of each host in Mbit/s (default {mbit:g})")
    if hosts is not None:
        ap.add_argument("--hosts", type=int, default=hosts, help=f"hosts of the emulated cluster (default {hosts})")
    if ppn is not None:
        ap.add_argument("--ppn", type=int, default=ppn, help=f"ranks per host (default {ppn})")
