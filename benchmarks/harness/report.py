"""How a benchmark reports: the machine a figure was measured on (and the commit and the
command line), and writing its generated section into a doc between its begin and end
markers, so that a re-run replaces only its own section.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from benchmarks.harness import ROOT

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


def system_summary() -> str:
    """`machine_summary()` and the operating system with its release."""
    return f"{machine_summary()} ({platform.system()} {platform.release()})"


def load_average_span() -> str:
    """The 1-minute load average when the benchmark started and now."""
    return (f"load average (1 min) {LOAD_AT_START[0]:.1f} at the start, "
            f"{os.getloadavg()[0]:.1f} at the end")


def host_lines(java_note: str = "") -> list[str]:
    """Two Markdown list items: the hardware and the load average over the run (other
    work on the machine shows there), then Python and Java."""
    return [
        f"- CPUs (`nproc`): {os.cpu_count()}; RAM: {memory_gib():.1f} GiB; "
        f"{platform.system()} {platform.release()} {platform.machine()}; "
        f"{load_average_span()} (other work on the machine shows here)",
        f"- Python {platform.python_version()}; Java: {java_version()}{java_note}",
    ]


def git_commit() -> str:
    """The short hash of the checkout's HEAD, with "-dirty" when tracked files differ from it
    (the figures then come from code no commit holds), or "unknown"."""
    described = subprocess.run(
        ["git", "describe", "--always", "--dirty", "--abbrev=7", "--exclude", "*"], cwd=ROOT,
        check=False, capture_output=True, text=True,
    ).stdout.strip()
    return described or "unknown"


def command_line(script: str) -> str:
    """The command a report quotes: `python benchmarks/<script>` with this run's arguments,
    --write-docs left out."""
    return " ".join([f"python benchmarks/{script}", *sys.argv[1:]]).replace(
        " --write-docs", "")


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


@dataclass(frozen=True)
class DocSection:
    """The section of `doc` a benchmark regenerates: between `<!-- {marker}:begin -->` and
    `<!-- {marker}:end -->`; a doc that does not exist yet starts with `# {title}`."""

    doc: Path
    marker: str
    title: str

    def write(self, text: str) -> None:
        begin, end = f"<!-- {self.marker}:begin -->", f"<!-- {self.marker}:end -->"
        write_section(self.doc, begin, end, f"{begin}\n{text}\n{end}", self.title)
