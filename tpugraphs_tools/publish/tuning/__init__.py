"""Official raw tuning data (``tpu_graphs`` protos) → a tgt dataset: ``tgt import --tuning-data``.

``proto`` decodes the wire format, ``prepare`` turns one module's runs into a graph and its
config rows, ``importer`` reads the files into a staged dataset. Outside publish/, use the
publish face.
"""
