"""ABC: an MPI-based coordinated data-parallel web crawler.

The folders ``kernels/`` and ``partition/`` of the source tree are installed as
``abc_crawler.kernels`` and ``abc_crawler.partition``.

OpenBLAS (NumPy's BLAS) runs one thread per process unless ``OPENBLAS_NUM_THREADS``
is set: ABC's processes are MPI ranks, which already take the machine's cores
(the usual rule for MPI + BLAS), nothing of ABC's multiplies dense matrices, and
starting OpenBLAS's thread pool cost each process about 0.1 CPU-seconds at
``import numpy`` (measured on 2 cores: 0.19-0.20 s against 0.08-0.10 s; a
quarter of a rank's start-up CPU; ``docs/BENCHMARKS.md``).
"""
import os as _os

_os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # before anything imports NumPy

__version__ = "0.1.0"
