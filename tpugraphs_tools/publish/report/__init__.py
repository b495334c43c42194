"""``tgt report``: an offline HTML page with PNG plots describing a dataset.

``page`` writes it; ``stats`` reads the tables once into figures (``quantiles`` keeps their
medians and boxes exact without holding the table, ``labels`` the per-graph headroom); ``html``,
``plots`` and ``ci_plots`` draw them. Outside publish/, use the publish face.
"""
