"""transformers families: one spec per ``model_type`` (``registry.SPECS``).

``spec`` defines a family; ``registry`` declares every family; ``card_to_config`` writes a
card as its family's config. import-hf (``archdb.hf_import``) reads configs through the
same specs, ``archdb.weights`` takes checkpoint names from them, and ``archdb.fidelity``
their measured logit errors. The registry is imported on demand: it pulls in the
importer and the writers, which the query commands do not need.
"""
