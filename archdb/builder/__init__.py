"""archdb.builder: a card's plan (``archdb.plan``) becomes PyTorch modules.

- ``model``: ``build_model``, the fold of a plan into a model (embeddings, blocks, stacks,
  heads; each part's module from its spec, ``registry``: ``module_of(spec, ctx)``), and
  reading a built model;
- ``altup``: Gemma 3n's AltUp streams and LAuReL, built from the plan's specs;
- ``shrink``: the toy scaling rule; ``loss``: cross-entropy with the optional z-loss.

The parts' own modules live with their specs in ``archdb.parts``. Nothing here imports
torch at package import, so ``archdb.measure.analytic`` stays torch-free.
"""
