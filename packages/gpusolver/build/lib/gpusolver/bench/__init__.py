"""Flux-kernel and solver benchmarks (``gpusolver bench``, ``gpusolver bench-flux``)."""
