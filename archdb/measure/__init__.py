"""archdb.measure: exact parameters, FLOPs and KV cache, each with its convention.

- what a FLOP and a parameter count mean is ``archdb.conventions`` (a leaf the plan, the
  schema's mixer plugins and this package share), the tally of them ``archdb.tally``;
- ``analytic``: exact figures as folds over a card's plan, torch-free (``derived_figures``
  for queries; ``cache_size``: the one KV-cache definition);
- ``params``: counts read from a built model (meta device for full size);
- ``flops``: fvcore with archdb's operator handles, on a toy;
- ``summary``: what ``archdb build`` and ``archdb flops`` report.

The same architecture in Hugging Face transformers (the reference of the tests) is
``archdb_hf.families`` (card -> config) and ``archdb_hf.testing``.
"""
