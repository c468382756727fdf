"""A rank's start-up: what importing ABC costs beyond its own code (issue 37).

OpenBLAS starts a pool of threads at ``import numpy``; in a process that is one
MPI rank of several on a machine the pool only costs (about 0.1 CPU-s a process
on this VM), so ABC runs one BLAS thread unless the user says otherwise.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

_THREADS = ("import re, sys\n"
            "{imports}\n"
            "status = open('/proc/self/status').read()\n"
            "print(re.search(r'Threads:\\s+(\\d+)', status).group(1), os.environ.get('OPENBLAS_NUM_THREADS'))\n")


def _run(imports: str, **env) -> tuple[int, str | None]:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    full.update(env)
    out = subprocess.run([sys.executable, "-c", "import os\n" + _THREADS.format(imports=imports)],
                         capture_output=True, text=True, timeout=60, env=full)
    assert out.returncode == 0, out.stderr
    threads, value = out.stdout.split()
    return int(threads), (None if value == "None" else value)


def _python(code: str) -> str:
    """What a fresh interpreter running ``code`` prints (it must exit 0)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
def test_abc_starts_numpy_with_one_blas_thread_unless_told_otherwise():
    assert _run("import abc_crawler.cli, numpy") == (1, "1")          # the crawl's entry point
    assert _run("import abc_crawler.cli, numpy", OPENBLAS_NUM_THREADS="2")[1] == "2"   # the user's value stays
    if (os.cpu_count() or 1) > 1:
        # control: NumPy alone starts OpenBLAS's pool here, so the count above is ABC's doing
        assert _run("import numpy")[0] > 1


def test_distinct_is_np_unique_without_importing_numpy_ma():
    import doctest

    import numpy as np

    from abc_crawler import arrays

    assert doctest.testmod(arrays).failed == 0
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 50, 1000):
        a = rng.integers(-5, 40, size=n)
        assert arrays.distinct(a).tolist() == sorted(set(a.tolist()))
    assert _python("import sys, numpy as np\nfrom abc_crawler.arrays import distinct\n"
                   "distinct(np.array([3, 1, 3]))\nprint('numpy.ma' in sys.modules)").strip() == "False"


def test_the_crawl_imports_no_module_it_needs_only_sometimes():
    """w3lib.url (with urllib.request, http.client and email: 15 ms a rank), tomllib (a config
    file) and ssl (rank 0's CA bundle) are imported where they are used, not by every rank's
    start-up; what uses them still works."""
    loaded, url = _python("import sys\nimport abc_crawler.cli, abc_crawler.run\n"
                          "late = ['urllib.request', 'http.client', 'w3lib.url', 'tomllib', 'ssl']\n"
                          "print(' '.join(m for m in late if m in sys.modules) or '-')\n"
                          "from abc_crawler.web.urls import canonicalize\n"
                          "print(canonicalize('/b.html?z=1&a=2', 'http://ex.test/'))\n").split()
    assert loaded == "-", f"imported at start-up: {loaded}"
    assert url == "http://ex.test/b.html?a=2&z=1"          # w3lib's canonicalize_url, imported at first use
