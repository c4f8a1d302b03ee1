"""What the benchmark scripts share: how they describe the machine a figure was measured
on, and how they write their generated section into a doc (between its begin and end
markers, so a re-run replaces only its own section). Standard library only; the scripts
run as `python benchmarks/<name>.py`, which puts this folder on sys.path.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

# Taken when the benchmark starts (its first import of this module).
LOAD_AT_START = os.getloadavg()


def java_version() -> str:
    """The first line `java -version` prints, or "not found"."""
    try:
        printed = subprocess.run(
            ["java", "-version"], check=False, capture_output=True, text=True
        ).stderr
    except FileNotFoundError:
        return "not found"
    return printed.splitlines()[0] if printed else "not found"


def memory_gib() -> float:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30


def machine_summary() -> str:
    """One line: CPUs, memory, architecture, Python and Java."""
    return (f"{os.cpu_count()} CPUs, {memory_gib():.0f} GiB RAM, {platform.machine()}, "
            f"Python {platform.python_version()}, {java_version()}")


def host_lines(java_note: str = "") -> list[str]:
    """Two Markdown list items: the hardware and the load average over the run (other
    work on the machine shows there), then Python and Java."""
    return [
        f"- CPUs (`nproc`): {os.cpu_count()}; RAM: {memory_gib():.1f} GiB; "
        f"{platform.system()} {platform.release()} {platform.machine()}; load average "
        f"(1 min) {LOAD_AT_START[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end "
        "(other work on the machine shows here)",
        f"- Python {platform.python_version()}; Java: {java_version()}{java_note}",
    ]


def write_section(doc: Path, begin: str, end: str, section: str, title: str) -> None:
    """Put `section` (which starts with `begin` and ends with `end`) in place of the doc's
    current section between those markers, or append it; a missing doc starts with `title`."""
    text = doc.read_text() if doc.exists() else f"# {title}\n"
    if begin in text and end in text.split(begin, 1)[1]:
        before, rest = text.split(begin, 1)
        text = before + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
