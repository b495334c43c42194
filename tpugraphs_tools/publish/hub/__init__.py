"""``tgt publish``: a dataset as a Hugging Face–ready folder (Parquet shards, card, Croissant).

``publish`` writes the folder; ``tables`` builds the rows with their arrays, ``shards`` names
and sizes the Parquet files, ``info`` gathers what the ``card`` (with its ``yaml`` front
matter) and the ``croissant`` metadata say. Outside publish/, use the publish face.
"""
