"""archdb.builder: cards become PyTorch models.

- ``layout``: how an architecture unfolds into layers (pure Python, shared with the
  analytic formulas), and the defaults for unknown choices;
- ``norms``, ``mlp``, ``positions``, ``kernels``, ``attention``, ``moe``, ``blocks``: one
  small block per architectural choice, taking plain numbers;
- ``model``: the assembly (``build_model``), the only module that reads an architecture;
- ``shrink``: the toy scaling rule; ``loss``: cross-entropy with the optional z-loss.

Nothing here imports torch at package import, so ``archdb.measure.analytic`` stays
torch-free.
"""
