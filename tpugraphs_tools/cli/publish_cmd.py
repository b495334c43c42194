"""``tgt publish``: Parquet shards + dataset card + Croissant metadata + checksums."""

from __future__ import annotations

import click

from tpugraphs_tools.cli._common import (
    data_argument,
    handle_errors,
    plural,
    split_options,
    terminal,
)


@click.command("publish")
@data_argument
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="Folder to write; it appears only when complete.")
@click.option("--name", default=None,
              help="Dataset name (shard prefix, card title). Default: DATA's folder name.")
@click.option("--license", "license_", default=None,
              help="License id for the card and Croissant, e.g. cc-by-4.0 or apache-2.0. "
                   "Not given: 'unknown', with a warning.")
@click.option("--version", "version", default="1.0.0", show_default=True,
              help="Dataset version recorded in croissant.json.")
@split_options
@click.option("--max-shard-mb", type=click.IntRange(min=1), default=500, show_default=True,
              help="Largest shard (uncompressed Arrow size).")
@click.option("--overwrite", is_flag=True, help="Replace --out if it is not empty.")
@handle_errors
def publish(data: str, out: str, name: str | None, license_: str | None, version: str,
            split_by: str, seed: int, ratios: tuple[float, float, float], max_shard_mb: int,
            overwrite: bool) -> None:
    """Write DATA (default data/) as a shareable Parquet dataset with card and Croissant.

    \b
    Writes graphs/ and configs/ shards named {name}-{split}-{i:05d}-of-{n:05d}.parquet,
    README.md (Hugging Face card with configs/dataset_info YAML), croissant.json
    (Croissant 1.1) and SHA256SUMS.
    Example:
      tgt publish data/ --out release/ --name my-graphs --license cc-by-4.0
      tgt publish data/ --out release/ --split-by fingerprint --max-shard-mb 200 --overwrite
    """
    from tpugraphs_tools.publish import publish_dataset

    with terminal.status("publishing"):
        result = publish_dataset(data, out, name=name, license=license_, version=version,
                                 split_by=split_by, seed=seed, ratios=ratios,
                                 max_shard_bytes=max_shard_mb << 20, overwrite=overwrite)
    terminal.warnings(result.warnings)
    counted = ("graphs", "configs", "labels", "control rows")
    table = terminal.table(f"{result.name} in {out}", ("split", *counted), right=counted)
    for split, count in result.rows("graphs").items():
        counts = result.counts.get(split)
        table.add_row(split, str(count), *(str(n) for n in (
            (counts.configs, counts.labels, counts.control_rows) if counts else (0, 0, 0))))
    terminal.print(table)
    terminal.success(f"{plural(len(result.shards), 'shard')}, README.md, croissant.json, "
                     f"SHA256SUMS → {out}")
