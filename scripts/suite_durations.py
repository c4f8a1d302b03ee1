"""Where the suite's time goes, from a pytest JUnit XML report.

Usage: scripts/test --junitxml=report.xml; python scripts/suite_durations.py report.xml
Prints seconds per test directory and per module (setup, call and teardown together, as
pytest records them), summed over both workers, and the slowest tests.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from collections import defaultdict


def main(path: str, top: int = 25) -> None:
    cases = ElementTree.parse(path).getroot().iter("testcase")
    per_directory: dict[str, float] = defaultdict(float)
    per_module: dict[str, float] = defaultdict(float)
    tests: list[tuple[float, str]] = []
    for case in cases:
        seconds = float(case.get("time", "0"))
        module = case.get("classname", "")
        parts = module.split(".")
        per_directory[".".join(parts[:2])] += seconds
        per_module[module.rsplit(".", 1)[0] if parts[-1][:1].isupper() else module] += seconds
        tests.append((seconds, f"{module}::{case.get('name')}"))
    total = sum(per_directory.values())
    print(f"total test time (both workers): {total:.0f} s over {len(tests)} tests")
    print("\nper directory:")
    for name, seconds in sorted(per_directory.items(), key=lambda item: -item[1]):
        print(f"  {seconds:7.0f} s  {100 * seconds / total:4.1f} %  {name}")
    print(f"\n{top} slowest modules:")
    for name, seconds in sorted(per_module.items(), key=lambda item: -item[1])[:top]:
        print(f"  {seconds:7.0f} s  {name}")
    print(f"\n{top} slowest tests:")
    for seconds, name in sorted(tests, reverse=True)[:top]:
        print(f"  {seconds:7.1f} s  {name}")


if __name__ == "__main__":
    main(sys.argv[1])
