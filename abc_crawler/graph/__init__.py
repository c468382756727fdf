"""Rank 0's graph: the coordinator (URL table, page graph, statistics kernels' feed), the session
metrics, host ranks, and the web-graph exports."""
