"""Live graph statistics for rank 0: Cython kernels and their facade.

This folder is installed as ``abc_crawler.kernels`` (setuptools
``package-dir``); every ``_*.pyx`` here is built into an extension module of
that package.

* :class:`GraphStats` -- the facade the coordinator uses.
* :class:`APSD` -- incremental all-pairs shortest distances (SPAWC Alg. 1),
  for the first N pages.
* :class:`SCC` -- incremental strongly connected components (SPAWC Alg. 2),
  for the first N pages.
* :class:`WholeSCC` -- exact SCCs of the whole graph in O(n + m) memory, and
  :func:`scc_of_csr` (Tarjan, iterative) for a CSR graph.
* :class:`HyperBall` -- HyperBall/HyperANF estimates of the neighbourhood
  function; :mod:`.distances` turns it into figures with standard errors.
* :class:`Degrees` -- in/out degree histograms and dangling nodes.
* :mod:`.reference` -- pure-Python/NumPy references of the kernels.
* :mod:`.graphs` -- GraphBench-style insertion sequences (Ausiello, complete, ...).
"""
from abc_crawler.kernels._apsd import APSD
from abc_crawler.kernels._degree import Degrees
from abc_crawler.kernels._hyperball import HyperBall
from abc_crawler.kernels._scc import SCC
from abc_crawler.kernels._validation import DistanceOverflowError
from abc_crawler.kernels._wholescc import WholeSCC, scc_of_csr
from abc_crawler.kernels.graphstats import GraphStats

__all__ = ["GraphStats", "APSD", "SCC", "WholeSCC", "scc_of_csr", "HyperBall", "Degrees",
           "DistanceOverflowError"]
