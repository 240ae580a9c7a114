"""archdb.plan: a card read once into specs (pure Python, no torch at import).

- ``layout``: what a card must give, defaults for unknown choices, per-layer facts;
- ``norms``, ``mlp``, ``attention``, ``positions``: one spec per part with its
  ``params()``, ``flops(tally)`` and ``cache_entries(context)``, and the registries
  (norm kinds, QK norms, activations, kernels, position schemes);
- ``plan``: ``make_plan(arch)`` and the folds: ``params``, ``flops``, ``cache_bytes``.

The builder (``archdb.builder.model.build_plan``, each spec's module from the builder's
registry) and the formulas (``archdb.measure.analytic``) are folds over the same plan;
nothing here imports the builder.
"""

from .plan import Plan, cache_bytes, flops, make_plan, params

__all__ = ["Plan", "cache_bytes", "flops", "make_plan", "params"]
