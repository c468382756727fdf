"""Repartitioning between sessions with Türk's models (installed as ``abc_crawler.partition``).

Modules
-------
:mod:`.models`
    Page/site graphs and hypergraphs of a session, in CSR form.
:mod:`.metis`
    ctypes binding of ``METIS_PartGraphKway`` (two constraints) over
    cmeel-metis's ``libmetis.so``; pymetis for single-constraint runs.
:mod:`.hypergraph`
    Mt-KaHyPar k-way partitioning, objective connectivity−1.
:mod:`.balance`
    Part weights, imbalance, two-constraint balance repair and refinement.
:mod:`.assignment_metrics`
    :func:`~.assignment_metrics.predict`: volume, messages, imbalances of any
    owner assignment, predicted or measured; the exchange's lower bounds.
:mod:`.owners`
    Owner arrays under ``hash``, ``site-hash``, part vectors, measured ranks.
:mod:`.partvec`
    The ``partvec.npz`` file, its owner rule and :func:`~.partvec.remap`.
:mod:`.export`
    METIS ``.graph`` and hMETIS ``.hgr`` files.
:mod:`.cli`
    ``abc-repartition``.
:mod:`.synthetic`
    Web-like synthetic session graphs and the benchmark of
    ``docs/benchmarks/partition.md``.

Submodules are imported on demand (METIS and Mt-KaHyPar are loaded only when
a partition is computed).
"""
