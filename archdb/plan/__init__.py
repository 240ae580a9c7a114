"""archdb.plan: a card read once into specs (pure Python, no torch at import).

- ``layout``: what a card must give, defaults for unknown choices, per-layer facts;
- ``readers``: which part spec (``archdb.parts``) each layer's attention gets;
  ``recurrent``: the mixer plugins' specs (``archdb.mixers``); ``mtp``: MTP modules;
- ``plan``: ``make_plan(arch)``, the embedding, block and stack specs that hold the parts,
  and the folds: ``params``, ``flops``, ``cache_bytes``, ``layer_runs``.

The builder (``archdb.builder.model.build_plan``: each spec's module) and the formulas
(``archdb.measure.analytic``) are folds over the same plan; nothing here imports the
builder.
"""

from .plan import Plan, cache_bytes, flops, make_plan, params

__all__ = ["Plan", "cache_bytes", "flops", "make_plan", "params"]
