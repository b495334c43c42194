"""tgt: build, validate and publish TpuGraphs-style datasets from any JAX program or HLO dump."""

__version__ = "0.2.0"
