"""The tile pipeline: every kernel of an optimized module × its configs × measured runtimes.

Modules, from the entry points down: ``run.py`` (``tgt collect --collection tile`` into a
dataset, kernel by kernel, resumable), ``program.py`` (a program's kernels measured and built
into graphs; ``collect_tile``, the in-memory library call), ``kernel.py`` (one kernel's configs
measured), ``stores.py`` (where finished kernels go: memory, or a dataset), ``record.py`` (the
program record an unsettled collection leaves in ``.tgt-work/``), ``labels.py`` (config rows
and npz arrays), ``summary.py`` (what a program's collection reports), ``options.py``
(``TileOptions``). collect modules import them by full path; the library call and its options
are on the collect face.
"""
