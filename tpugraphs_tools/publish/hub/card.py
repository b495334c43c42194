"""README.md dataset card: Hugging Face YAML (``configs``, ``dataset_info``) + prose.

The YAML ``features`` follow the ``datasets`` library's own YAML form, so ``load_dataset`` on
the folder (or the Hub repo) reads the columns with the declared types.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tpugraphs_tools.format import NODE_FEATURE_WIDTH
from tpugraphs_tools.publish.hub.info import HF_SPLIT, TABLES, Provenance, PublishInfo
from tpugraphs_tools.publish.hub.yaml import dump
from tpugraphs_tools.store import ConfigCounts

_HF_SCALARS = {pa.float16(): "float16", pa.float32(): "float32", pa.float64(): "float64",
               pa.bool_(): "bool", pa.string(): "string", pa.large_string(): "large_string",
               pa.binary(): "binary", pa.large_binary(): "large_binary"}


def hf_dtype(t: pa.DataType) -> str:
    if t in _HF_SCALARS:
        return _HF_SCALARS[t]
    if pa.types.is_integer(t):
        return str(t)
    raise ValueError(f"no Hugging Face dtype for Arrow type {t}")


def _hf_inner(t: pa.DataType) -> Any:
    if pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        spec: dict[str, Any] = {"list": _hf_inner(t.value_type)}
        if pa.types.is_fixed_size_list(t):
            spec["length"] = t.list_size
        return spec
    return hf_dtype(t)


def hf_features(schema: pa.Schema) -> list[dict[str, Any]]:
    """``dataset_info.features`` in the YAML form of ``datasets.Features``."""
    out = []
    for f in schema:
        inner = _hf_inner(f.type)
        out.append({"name": f.name, **(inner if isinstance(inner, dict) else {"dtype": inner})})
    return out


def type_text(t: pa.DataType) -> str:
    """Readable Arrow type: ``list<fixed_size_list<float32, 2>>``."""
    if pa.types.is_fixed_size_list(t):
        return f"fixed_size_list<{type_text(t.value_type)}, {t.list_size}>"
    if pa.types.is_list(t):
        return f"list<{type_text(t.value_type)}>"
    return hf_dtype(t)


def _size_category(n: int) -> str:
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
              (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M")]
    return next((label for limit, label in bounds if n < limit), "100M<n<1B")


def front_matter(info: PublishInfo) -> dict[str, Any]:
    configs, dataset_info = [], []
    for table in TABLES:
        splits = info.splits(table)
        if not splits:
            continue
        configs.append({"config_name": table, **({"default": True} if table == "graphs" else {}),
                        "data_files": [{"split": HF_SPLIT[s],
                                        "path": f"{table}/{info.name}-{s}-*.parquet"}
                                       for s in splits]})
        split_info = []
        dataset_size = 0
        for s in splits:
            rows, nbytes = info.split_rows(table, s)
            split_info.append({"name": HF_SPLIT[s], "num_bytes": nbytes, "num_examples": rows})
            dataset_size += nbytes
        dataset_info.append({"config_name": table, "features": hf_features(info.schemas[table]),
                             "splits": split_info, "download_size": info.download_size(table),
                             "dataset_size": dataset_size})
    examples = max(info.provenance.graphs, info.provenance.counts.rows)
    return {"license": info.license, "pretty_name": info.name,
            "tags": ["tpugraphs", "xla", "hlo", "compiler", "graph", "performance-prediction"],
            "task_categories": ["graph-ml"], "size_categories": [_size_category(examples)],
            "configs": configs, "dataset_info": dataset_info}


def _facts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in counts.items()) or "none"


def _collection(p: Provenance) -> list[str]:
    host = p.host
    lines = [
        f"- **Made with** tgt {p.tgt_version} (dataset format v{p.format_version}), "
        f"created {p.created_at}, last updated {p.updated_at}.",
        f"- **JAX** {p.jax_version}, jaxlib {p.jaxlib_version}; per graph: "
        f"{_facts(p.graph_jax_versions)}. Python {p.python_version}, "
        f"NumPy {p.numpy_version}.",
        f"- **Backend / device** (graphs): {_facts(p.backends)}. Devices in the manifest: "
        + (", ".join(f"{d['platform']} {d['device_kind']}".strip() for d in p.devices)
           or "none") + ".",
        f"- **Host**: {host.get('platform')}, {host.get('machine')}, "
        f"{host.get('cpu_count')} CPUs.",
        f"- **Graph sources**: {_facts(p.sources)}; collections: {_facts(p.collections)}; "
        f"HLO stage: {_facts(p.hlo_stages)}; {p.programs} programs.",
        f"- **Search strategies** (config rows): {_facts(p.strategies)}.",
        f"- **Config status**: {_facts(p.statuses)}.",
        "- **XLA_FLAGS**: " + (", ".join(f"`{f}`" for f in p.xla_flags) or "none") + ".",
    ]
    if p.repeats:
        lines.append(f"- **Timed repeats per config**: {p.repeats[0]}–{p.repeats[1]}.")
    if p.timing_cpus:
        lines.append("- **CPUs the timed runs could use** (config rows per count; one-core and "
                     f"all-core labels are different measurements): {_facts(p.timing_cpus)}.")
    return [*lines, "", "### Timing method", "", "\n\n".join(p.timing) or "No timings."]


def _columns(info: PublishInfo, table: str) -> list[str]:
    lines = ["| column | type | description |", "|---|---|---|"]
    for f in info.schemas[table]:
        text = info.descriptions[table].get(f.name, "").replace("|", "\\|")
        lines.append(f"| `{f.name}` | `{type_text(f.type)}` | {text} |")
    return lines


def card_text(info: PublishInfo) -> str:
    """The whole README.md."""
    p = info.provenance
    table = ["| split | graphs | configs | labels | control rows |", "|---|---|---|---|---|"]
    for s in info.splits("graphs"):
        counts = info.split_counts.get(s, ConfigCounts())
        table.append(f"| {HF_SPLIT[s]} (`{s}`) | {info.split_rows('graphs', s)[0]} | "
                     f"{counts.configs} | {counts.labels} | {counts.control_rows} |")
    files = [f"{s.rel}  ({s.rows} rows, {s.size} bytes)" for s in info.shards]
    ratios = ",".join(f"{r:g}" for r in info.ratios)
    body = [
        f"# {info.name}", "",
        f"TpuGraphs-style dataset built with tgt (tpugraphs-tools): {p.graphs} XLA HLO "
        f"graphs of {p.programs} programs and {p.counts.configs} compiler configurations, "
        f"{p.counts.labels} of them labelled with a measured runtime (failed, no-op and "
        "duplicate configurations are included, with their status). Arrays use the TpuGraphs "
        "features, dtypes and shapes (arXiv 2308.13490); nothing needs npz files.", "",
        "## Contents", "", *table, "",
        "Configs: one per configuration tried (the compiler default included); labels: the "
        "`ok` ones, with a measured runtime; control rows (`control`, `repeat`): timing "
        "checks, not configurations. The configs table holds configs and control rows.", "",
        f"Splits hold out whole {info.split_by}s (no {info.split_by} is in two splits); "
        f"seed {info.seed}, ratios {ratios} (train,valid,test) for groups without a stored "
        "split.", "",
        "## How it was collected", "", *_collection(p), "",
        "## Files", "", "```", "README.md", "croissant.json   (Croissant 1.1 metadata)",
        "SHA256SUMS       (sha256sum -c SHA256SUMS)", *files, "```", "",
        "## Columns", "", "### graphs (one row per graph)", "", *_columns(info, "graphs"), "",
        "### configs (one row per graph x configuration)", "", *_columns(info, "configs"), "",
        "## Usage", "", "```python",
        "from datasets import load_dataset",
        "graphs = load_dataset(\"path/to/this/folder\", \"graphs\", split=\"train\")",
        "configs = load_dataset(\"path/to/this/folder\", \"configs\", split=\"train\")",
        "", "import numpy as np",
        "g = graphs[0]",
        f"node_feat = np.asarray(g[\"node_feat\"], np.float32)      # [n, {NODE_FEATURE_WIDTH}]",
        "edge_index = np.asarray(g[\"edge_index\"], np.int64)      # [m, 2]",
        "", "import polars as pl",
        "ok = pl.read_parquet(\"configs/*.parquet\").filter(pl.col(\"status\") == \"ok\")",
        "```", "", "```sql",
        "-- duckdb",
        "SELECT program, min(relative_to_default) AS best FROM 'configs/*.parquet'",
        "WHERE status = 'ok' GROUP BY program;",
        "```", "",
        "A graph's TpuGraphs npz is its graph row plus, for its ok configs in `npz_row` order, "
        "`node_config_feat`/`config_feat` stacked and `config_runtime` "
        "(`tgt export --format tpugraphs` writes the official tree).", "",
        "## License", "", f"`{info.license}`", "",
        "## Citation", "",
        "The format follows TpuGraphs: Phitchaya Mangpo Phothilimthana et al., "
        "\"TpuGraphs: A Performance Prediction Dataset on Large Tensor Computational Graphs\", "
        "NeurIPS 2023 Datasets and Benchmarks, arXiv:2308.13490.", "",
    ]
    return "---\n" + dump(front_matter(info)) + "---\n\n" + "\n".join(body)
