"""The one place the MPI tests' time limits come from: each test's own (pytest-timeout, per file
below) and the wrapping ``timeout`` of ``make test`` around one ``mpiexec`` run, which is their sum
plus a start-up allowance — so a hanging test fails by its own timeout, with its name, before the
wrapper kills the whole run.

    python tests/mpi/budget.py      # prints the wrapper's seconds (the Makefile runs it)
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: seconds one test of each file may take (a 4x slower machine than this one still meets them)
PER_TEST = {"test_bulk_mpi.py": 120, "test_crawl_mpi.py": 240, "test_exchange_mpi.py": 60, "test_gather_mpi.py": 120}
#: mpiexec's start and pytest's collection on every rank
STARTUP_S = 60


def per_test(path: str) -> int:
    """The timeout of the tests of the file at ``path`` (its ``pytestmark``)."""
    return PER_TEST[Path(path).name]


def total() -> int:
    """Every collected test's timeout, summed, plus the start-up allowance."""
    here = Path(__file__).resolve().parent
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", str(here)],
                         capture_output=True, text=True, check=True).stdout
    files = [line.split("::", 1)[0] for line in out.splitlines() if "::" in line]
    unknown = {Path(f).name for f in files} - set(PER_TEST)
    if unknown:
        raise SystemExit(f"tests/mpi/budget.py: no timeout for {sorted(unknown)}: add them to PER_TEST")
    return STARTUP_S + sum(PER_TEST[Path(f).name] for f in files)


if __name__ == "__main__":
    print(total())
