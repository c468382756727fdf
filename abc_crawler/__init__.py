"""ABC: an MPI-based coordinated data-parallel web crawler.

The folders ``kernels/`` and ``partition/`` of the source tree are installed as
``abc_crawler.kernels`` and ``abc_crawler.partition``.
"""
__version__ = "0.1.0"
