"""Peak resident memory and wall time of a command and every process it starts (docs/tests.md).

`/usr/bin/time -v` gives one process's peak; the suite starts servers, store processes and a
browser, so this samples the resident memory of the whole process tree (Linux `/proc`) twice a
second and reports the largest sum seen, the largest single process and the wall time, and which
processes held the memory at that peak (the largest ten, by command line).

Two sums: resident (RSS), which counts a page shared by several processes (a library, Chromium's
binary) once in each, and proportional (PSS, `/proc/<pid>/smaps_rollup`), which splits a shared page
among its sharers, so that its sum is what the tree takes from the machine (read every two seconds
and at each new resident peak: it costs the kernel a walk of every page). `--timeline FILE` writes
every sample (seconds, both sums in MiB, the processes).

    python benchmarks/suite_memory.py -- scripts/test.sh -q
    python benchmarks/suite_memory.py -- scripts/test.sh --quick -q
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> dict[int, list[int]]:
    """Each process's children, read from `/proc/<pid>/stat` (parent id is the 4th field)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone since the listing
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _rss(pid: int) -> int:
    """Resident bytes of `pid` (0 once it is gone)."""
    try:
        return int((Path("/proc") / str(pid) / "statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


PSS_EVERY = 2.0  # seconds between reads of the proportional sum (and at every new resident peak)


def _pss(pid: int) -> int:
    """Proportional resident bytes of `pid` (0 once it is gone or unreadable)."""
    try:
        for line in (Path("/proc") / str(pid) / "smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _command(pid: int) -> str:
    try:
        argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    return " ".join(a.decode(errors="replace") for a in argv if a)[:100]


def tree_rss(root: int) -> list[tuple[int, int]]:
    """(pid, resident bytes) of `root` and all its descendants."""
    tree = _children()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append((pid, _rss(pid)))
        todo.extend(tree.get(pid, []))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--timeline", type=Path, help="write every sample to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    started = time.monotonic()
    proc = subprocess.Popen(command)
    peak_total = peak_one = peak_pss = pss = 0
    pss_read = 0.0
    at_peak: list[tuple[str, int]] = []
    timeline = args.timeline.open("w") if args.timeline else None
    mib = 1024 * 1024
    while proc.poll() is None:
        sample = tree_rss(proc.pid)
        total = sum(rss for _pid, rss in sample)
        # PSS costs the kernel a walk of each process's pages (some 40 ms a sample for the suite's
        # tree): read every PSS_EVERY seconds and at each new resident peak, not at every sample.
        if total > peak_total or time.monotonic() - pss_read >= PSS_EVERY:
            pss, pss_read = sum(_pss(pid) for pid, _rss in sample), time.monotonic()
            peak_pss = max(peak_pss, pss)
        if timeline is not None:
            big = sorted(sample, key=lambda s: -s[1])[:8]
            who = "; ".join(f"{rss // mib} {_command(pid)[:60]}" for pid, rss in big)
            timeline.write(f"{time.monotonic() - started:.1f}\t{total // mib}\t{pss // mib}\t{who}\n")
        peak_one = max([peak_one, *(rss for _pid, rss in sample)])
        if total > peak_total:
            peak_total = total
            at_peak = [(_command(pid), rss) for pid, rss in sorted(sample, key=lambda s: -s[1])[:10]]
        time.sleep(args.interval)
    wall = time.monotonic() - started
    if timeline is not None:
        timeline.close()
    print(
        f"suite_memory: exit {proc.returncode}, wall {wall:.0f} s, peak of the process tree {peak_total / mib:.0f} MiB "
        f"resident (RSS), {peak_pss / mib:.0f} MiB proportional (PSS), largest single process {peak_one / mib:.0f} MiB",
        file=sys.stderr,
    )
    for command_line, rss in at_peak:
        print(f"  at the peak: {rss / mib:6.0f} MiB  {command_line}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
