#!/usr/bin/env python3
"""faults.py: a host fails in the middle of a reshard on the emulated cluster (ctest label `cluster`).

    faults.py --reshard PROG --fault cut|kill --mode ordered|concurrent [--hosts 4] [--mbit 50]
              [--victim 2] [--timeout-s 5] [--slack-s 8] [--auto-cleanup] [--json FILE]

Brings a cluster up (scripts/cluster.sh, prefix from MC_CLUSTER_PREFIX), starts meshcast-reshard
across it (2 ranks per host, a 16 MiB same-mesh transpose repeated until stopped, --timeout-s),
waits until the victim host has sent 4 MiB (so the reshard is under way: the set-up sends a few
KiB), then either cuts the victim's link (`cut`) or SIGKILLs its ranks (`kill`). Checks:

- mpiexec exits non-zero within --timeout-s + --slack-s seconds of the fault;
- every rank on the other hosts has ended by then (the namespaces are polled every 0.1 s; the
  time of each host's last rank is printed) and none is left afterwards;
- stderr names a device of the victim host as "device D (host H)" or "with device D", or (hydra's
  own clean-up after a killed rank, only with --auto-cleanup) the victim's address.

With `kill`, hydra by default ends the job itself as soon as a rank dies ("BAD TERMINATION ...
RUNNING AT <address>"); the test passes -disable-auto-cleanup unless --auto-cleanup is given, so
that the surviving ranks must notice by themselves. The source shards cannot be checked here (the
ranks die); the runs to completion (cluster.reshard_lossy) check them.

Always takes the cluster down (killing whatever is left, the cut host's ranks and proxy included),
even on failure. Exit 77 when namespaces cannot be made.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "..", "..", "scripts", "cluster.sh")
PREFIX = os.environ.get("MC_CLUSTER_PREFIX", "mc-")
SUBNET = os.environ.get("MC_CLUSTER_SUBNET", "10.99.0")


def cluster(*args, check=True, capture=False):
    r = subprocess.run(["bash", CLUSTER, *map(str, args)], stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.STDOUT if capture else None, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"cluster.sh {' '.join(map(str, args))} failed with status {r.returncode}")
    return r


def ranks_on(host, name):
    """pids of the processes called `name` (as ps shows it, 15 characters) in host's namespace."""
    r = subprocess.run(["ip", "netns", "pids", f"{PREFIX}h{host}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True)
    pids = []
    for pid in r.stdout.split():
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name[:15]:
                    pids.append(int(pid))
        except OSError:
            pass
    return pids


def sent_bytes(host):
    """Bytes the host's NIC has sent (its egress qdisc's counter)."""
    r = subprocess.run(["tc", "-n", f"{PREFIX}h{host}", "-s", "qdisc", "show", "dev", "eth0"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    m = re.search(r"Sent (\d+) bytes", r.stdout)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reshard", required=True)
    ap.add_argument("--fault", choices=["cut", "kill"], required=True)
    ap.add_argument("--mode", choices=["ordered", "concurrent"], required=True)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--mbit", type=float, default=50)
    ap.add_argument("--victim", type=int, default=2)
    ap.add_argument("--timeout-s", type=float, default=5)
    ap.add_argument("--slack-s", type=float, default=8)
    ap.add_argument("--auto-cleanup", action="store_true")
    ap.add_argument("--strategy", default="send_recv", help="send_recv (default), broadcast, send_recv_allgather")
    ap.add_argument("--dst-spec", default="S1,S0", help="destination spec on the same mesh (default S1,S0)")
    ap.add_argument("--json", help="append the figures of this run as one JSON line to FILE")
    a = ap.parse_args()
    ppn = 2
    ranks = a.hosts * ppn
    victim_devices = [a.victim * ppn + i for i in range(ppn)]
    name = os.path.basename(a.reshard)

    # ctest's timeout, ^C: still take the cluster down (the finally clause below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    rc = cluster("up", a.hosts, a.mbit, check=False).returncode
    if rc != 0:
        return rc  # 77: no namespaces here, skipped
    proc = None
    err = tempfile.TemporaryFile(mode="w+")
    try:
        mpiexec_extra = [] if (a.fault == "cut" or a.auto_cleanup) else ["-disable-auto-cleanup"]
        cmd = ["bash", CLUSTER, "mpiexec", "-ppn", str(ppn), "-n", str(ranks), *mpiexec_extra, a.reshard,
               "--shape", "2048x2048", "--src-mesh", f"{a.hosts}x{ppn}", "--src-spec", "S0,S1",
               "--dst-mesh", f"{a.hosts}x{ppn}", "--dst-spec", a.dst_spec, "--strategy", a.strategy, "--same-mesh", "--devices-per-host", str(ppn),
               "--nic-gbps", str(a.mbit / 1000), "--mode", a.mode, "--repeat", "100000",
               "--timeout-s", str(a.timeout_s)]
        print("faults.py:", " ".join(cmd[2:]), flush=True)
        t_launch = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)

        # Under way: every rank started, and the victim's NIC has sent 4 MiB.
        base = sent_bytes(a.victim)
        t_running = None
        while True:
            now = time.monotonic()
            if proc.poll() is not None:
                raise AssertionError(f"mpiexec ended (status {proc.returncode}) before the fault")
            if now - t_launch > 30:
                raise AssertionError("the reshard did not get under way within 30 s")
            if t_running is None and all(len(ranks_on(h, name)) == ppn for h in range(a.hosts)):
                t_running = now
            if t_running is not None and sent_bytes(a.victim) - base >= 4 << 20:
                break
            time.sleep(0.05)
        t_under_way = time.monotonic()

        # The fault.
        if a.fault == "cut":
            cluster("cut", a.victim)
        else:
            pids = ranks_on(a.victim, name)
            assert len(pids) == ppn, f"expected {ppn} ranks on host {a.victim}, found {pids}"
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:  # ended meanwhile
                    pass
        t_fault = time.monotonic()
        limit = a.timeout_s + a.slack_s
        print(f"faults.py: {a.fault} host {a.victim} (devices {victim_devices}) "
              f"{t_fault - t_launch:.2f} s after launch (ranks running after {t_running - t_launch:.2f} s, "
              f"4 MiB sent after {t_under_way - t_launch:.2f} s); limit {limit:g} s", flush=True)

        # Every survivor's ranks must end, and mpiexec with them.
        # After a cut the victim's ranks time out as well and must end by themselves too.
        survivors = [h for h in range(a.hosts) if h != a.victim]
        gone = {}
        victim_end = t_exit = None
        while True:
            now = time.monotonic()
            if t_exit is None and proc.poll() is not None:
                t_exit = now - t_fault
            for h in survivors:
                if h not in gone and not ranks_on(h, name):
                    gone[h] = now - t_fault
            if victim_end is None and not ranks_on(a.victim, name):
                victim_end = now - t_fault
            if t_exit is not None and len(gone) == len(survivors) and victim_end is not None:
                break
            if now - t_fault > limit + 1:
                break
            time.sleep(0.1)
        left = {h: ranks_on(h, name) for h in survivors}
        left = {h: p for h, p in left.items() if p}
        if victim_end is None:
            left[a.victim] = ranks_on(a.victim, name)

        err.seek(0)
        text = err.read()
        print(text, end="" if text.endswith("\n") else "\n")
        exits = ", ".join(f"host {h} {gone[h]:.2f} s" for h in sorted(gone))
        print(f"faults.py: after the fault: surviving hosts' ranks ended: {exits or 'none'}; "
              f"mpiexec exited {'with status %d after %.2f s' % (proc.returncode, t_exit) if t_exit is not None else 'NOT'}; "
              f"victim's ranks ended: {'after %.2f s' % victim_end if victim_end is not None else 'NOT'}", flush=True)

        failures = []
        if t_exit is None:
            failures.append(f"mpiexec did not exit within {limit + 1:g} s of the fault")
        elif t_exit > limit:
            failures.append(f"mpiexec exited {t_exit:.2f} s after the fault, more than {limit:g} s")
        elif proc.returncode == 0:
            failures.append("mpiexec exited with status 0")
        late = [h for h in survivors if h not in gone or gone[h] > limit]
        if late:
            failures.append(f"ranks on hosts {late} did not end within {limit:g} s: {left}")
        if victim_end is None or victim_end > limit:
            failures.append(f"the ranks of host {a.victim} did not end within {limit:g} s (MPI_Abort cannot reach "
                            f"the launcher from a cut host; meshcast-reshard must end regardless)")
        devs = "|".join(map(str, victim_devices))
        named = re.search(rf"device ({devs}) \(host {a.victim}\)|with device ({devs})\b", text)
        if not named and a.fault == "kill" and a.auto_cleanup:
            named = re.search(rf"RUNNING AT {re.escape(SUBNET)}\.{a.victim + 1}\b", text)
        if not named:
            failures.append(f"stderr does not name a device of host {a.victim} ({devs}) or its address")
        reporters = sorted(set(int(r) for r in re.findall(r"meshcast-reshard \(rank (\d+)\): error", text)))
        print(f"faults.py: ranks that reported an error: {reporters}; named: "
              f"{named.group(0) if named else 'nothing'}", flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps({"fault": a.fault, "mode": a.mode, "auto_cleanup": a.auto_cleanup,
                                    "fault_after_launch_s": round(t_fault - t_launch, 3),
                                    "exit_after_fault_s": None if t_exit is None else round(t_exit, 3),
                                    "status": proc.returncode, "host_ends_s": {str(h): round(t, 3) for h, t in gone.items()},
                                    "reporters": reporters,
                                    "victim_ranks_end_s": None if victim_end is None else round(victim_end, 3)}) + "\n")
        if failures:
            for h, pids in left.items():  # where the ranks that did not end are
                for pid in pids if shutil.which("gdb") else []:
                    bt = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
                    print(f"faults.py: host {h} pid {pid}:\n" +
                          "\n".join(l for l in bt.splitlines() if l.startswith(("#", "Thread"))))
            for f in failures:
                print("faults.py: FAILED:", f)
            return 1
        print("faults.py: ok")
        return 0
    except AssertionError as e:
        err.seek(0)
        print(err.read())
        print("faults.py: FAILED:", e)
        return 1
    finally:
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        cluster("down", check=False)


if __name__ == "__main__":
    sys.exit(main())
