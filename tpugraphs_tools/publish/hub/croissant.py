"""croissant.json: Croissant 1.1 JSON-LD metadata of a published dataset.

Every shard is a FileObject with its sha256 and size; each table is a FileSet over its
shards, and a RecordSet whose fields read the Parquet columns (list columns as arrays with
their shapes), so ``mlcroissant`` can iterate the records from the local files alone.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from tpugraphs_tools.publish.hub.info import TABLES, PublishInfo

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"
PARQUET = "application/x-parquet"
# The standard Croissant 1.1 @context (vocabulary of the spec).
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}
LICENSE_URLS = {
    "apache-2.0": "https://www.apache.org/licenses/LICENSE-2.0",
    "mit": "https://opensource.org/licenses/MIT",
    "cc-by-4.0": "https://creativecommons.org/licenses/by/4.0/",
    "cc-by-sa-4.0": "https://creativecommons.org/licenses/by-sa/4.0/",
    "cc-by-nc-4.0": "https://creativecommons.org/licenses/by-nc/4.0/",
    "cc0-1.0": "https://creativecommons.org/publicdomain/zero/1.0/",
}
CITATION = ("@inproceedings{tpugraphs, title={TpuGraphs: A Performance Prediction Dataset on "
            "Large Tensor Computational Graphs}, author={Phothilimthana, Phitchaya Mangpo and "
            "others}, booktitle={NeurIPS Datasets and Benchmarks}, year={2023}}")
KEYS = {"graphs": ["graph_id"], "configs": ["graph_id", "config_index"]}


def data_type(t: pa.DataType) -> tuple[str, str | None]:
    """(Croissant dataType of the leaf values, arrayShape or None for scalars)."""
    dims: list[str] = []
    while pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
        dims.append(str(t.list_size) if pa.types.is_fixed_size_list(t) else "-1")
        t = t.value_type
    if pa.types.is_boolean(t):
        leaf = "sc:Boolean"
    elif pa.types.is_integer(t):
        leaf = "sc:Integer"
    elif pa.types.is_floating(t):
        leaf = "sc:Float"
    else:
        leaf = "sc:Text"
    return leaf, (",".join(dims) if dims else None)


def _field(table: str, f: pa.Field, description: str) -> dict[str, Any]:
    leaf, shape = data_type(f.type)
    out: dict[str, Any] = {
        "@type": "cr:Field", "@id": f"{table}/{f.name}", "name": f.name,
        "dataType": leaf,
        "source": {"fileSet": {"@id": f"{table}-parquet"}, "extract": {"column": f.name}},
    }
    if description:
        out["description"] = description
    if shape is not None:
        out.update(isArray=True, arrayShape=shape)
    return out


def croissant(info: PublishInfo, description: str) -> dict[str, Any]:
    """The JSON-LD document (write it with ``json.dump``)."""
    distribution: list[dict[str, Any]] = []
    record_sets: list[dict[str, Any]] = []
    for table in TABLES:
        shards = [s for s in info.shards if s.table == table]
        if not shards:
            continue
        for s in shards:
            distribution.append({
                "@type": "cr:FileObject", "@id": s.rel, "name": s.rel.split("/")[-1],
                "contentUrl": s.rel, "encodingFormat": PARQUET, "sha256": s.sha256,
                "contentSize": f"{s.size} B",
            })
        distribution.append({
            "@type": "cr:FileSet", "@id": f"{table}-parquet", "name": f"{table}-parquet",
            "description": f"Parquet shards of the {table} table, one or more per split.",
            "encodingFormat": PARQUET, "includes": f"{table}/{info.name}-*.parquet",
        })
        keys = [{"@id": f"{table}/{k}"} for k in KEYS[table]]
        record_sets.append({
            "@type": "cr:RecordSet", "@id": table, "name": table,
            "description": ("One row per graph with its TpuGraphs arrays." if table == "graphs"
                            else "One row per graph x configuration, with its status, "
                                 "runtimes and config features."),
            "key": keys[0] if len(keys) == 1 else keys,
            "field": [_field(table, f, info.descriptions[table].get(f.name, ""))
                      for f in info.schemas[table]],
        })
    doc: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": info.name,
        "description": description,
        "license": LICENSE_URLS.get(info.license.lower(), info.license),
        "version": info.version,
        "datePublished": info.date_published,
        "citeAs": CITATION,
        "keywords": ["TpuGraphs", "XLA", "HLO", "compiler autotuning", "graph learning"],
        "distribution": distribution,
        "recordSet": record_sets,
    }
    return doc
