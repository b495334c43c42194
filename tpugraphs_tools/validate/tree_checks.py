"""The official TpuGraphs tree (``npz/{layout,tile}/.../{train,valid,test}/*.npz``) and bare
directories of npz files: which collection and split each file belongs to, one file at a time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tpugraphs_tools.format import tree_hints
from tpugraphs_tools.parallel import Pool
from tpugraphs_tools.validate.dataset_rows import check_tree_split_overlap
from tpugraphs_tools.validate.jobs import NpzJob, merge, run_npz_job
from tpugraphs_tools.validate.report import Report


@dataclass(frozen=True)
class TreeFile:
    path: Path
    rel: str
    collection: str | None  # None: decide from the file's keys
    split: str | None


def discover(root: Path) -> list[TreeFile]:
    """Every npz under ``root`` (sorted), tagged from its path components.

    The official scheme (``format.tree_hints``) gives collection and split, else the nearest
    ancestor named layout/tile and the nearest train/valid/test; components above ``root``
    count too, so pointing at ``npz/layout/xla/default/train`` still knows it is a layout
    train split.
    """
    above = root.resolve().parts
    files = []
    for path in sorted(root.rglob("*.npz")):
        if not path.is_file():
            continue
        hints = tree_hints(above + path.relative_to(root).parts)
        collection = None if hints.collection is None else hints.collection.value
        files.append(TreeFile(path, path.relative_to(root).as_posix(), collection, hints.split))
    return files


def is_tree(files: list[TreeFile]) -> bool:
    return any(f.collection is not None for f in files)


def check_tree(root: Path, files: list[TreeFile], report: Report, max_array_bytes: int,
               pool: Pool | None = None) -> None:
    """Validate each file (memory: one file per process; results in file order), then the
    split overlap of file stems."""
    stems: dict[tuple[str, str], dict[str, str]] = {}
    jobs = (NpzJob(f.path, f.rel, f.collection, f.split == "test", max_array_bytes,
                   partial_layouts_ok=True) for f in files)
    for f, result in zip(files, (pool or Pool(1)).map(run_npz_job, jobs), strict=False):
        if report.full:
            return
        merge(result, report)
        summary = result.summary
        collection = f.collection or (summary.collection if summary else None)
        if f.split is not None and collection is not None:
            stems.setdefault((collection, f.path.stem), {}).setdefault(f.split, f.rel)
    check_tree_split_overlap(stems, report)
