"""archdb_hf: archdb and Hugging Face transformers, both ways.

- ``importer``: ``import-hf``, a transformers ``config.json`` read into a card exactly as
  transformers reads it (class defaults, attribute names, keys it ignores);
- ``families``: one declaration per transformers ``model_type``: the keys it reads, the
  card -> config reference writer, its weight names and its fidelity;
- ``weights``: a transformers checkpoint's tensors loaded into archdb's build;
- ``hub``: ``import-hf ORG/MODEL[@REV]`` through huggingface_hub (or its local cache);
- ``testing``: transformers' models of a card, for the tests and benchmarks.

``archdb`` never needs this package to load, build or measure a card: it imports it lazily
where a checkpoint is loaded (``archdb.build(..., weights=)``) and where a card's fidelity
is judged; the CLI imports both.
"""
