"""archdb.builder: a card's plan (``archdb.plan``) becomes PyTorch modules.

- ``norms``, ``mlp``, ``positions``, ``kernels``, ``attention``, ``moe``, ``blocks``: one
  small block per architectural choice, taking plain numbers, beside the factory that
  makes it from its plan spec (``registry``: ``module_of(spec, ctx)``);
- ``model``: ``build_model``, the fold of a plan into a model, and reading a built model;
- ``shrink``: the toy scaling rule; ``loss``: cross-entropy with the optional z-loss;
- ``layout``: moved to ``archdb.plan.layout`` (its names stay importable from here).

Nothing here imports torch at package import, so ``archdb.measure.analytic`` stays
torch-free.
"""
