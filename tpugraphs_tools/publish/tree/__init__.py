"""The official TpuGraphs npz tree: export a dataset to it, import it back, and its contract.

``official`` conforms arrays to the official keys, ``npz`` reads one official file,
``provenance`` is what an export records beside the files, ``export`` and ``importer`` walk
the tree. Modules import each other by full path; outside publish/, use the publish face.
"""
