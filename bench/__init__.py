"""Benchmarks (each prints figures beside a baseline measured in the same run), the workload
generator they share, and the local harness that runs the whole chain on one machine (moto
server, deploy of the synthesized template, the demo)."""
