"""MPI: the superstep exchange (every collective), the shared clock and the gathering of WARC files."""
