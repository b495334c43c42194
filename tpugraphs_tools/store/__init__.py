"""Dataset storage: manifest + Parquet tables + one TpuGraphs npz per graph."""

from tpugraphs_tools.store.dataset import Dataset, Transaction, make_graph_id
from tpugraphs_tools.store.manifest import FORMAT_VERSION, MANIFEST
from tpugraphs_tools.store.schema import arrow_schema, load_schema

__all__ = ["FORMAT_VERSION", "MANIFEST", "Dataset", "Transaction", "arrow_schema",
           "load_schema", "make_graph_id"]
