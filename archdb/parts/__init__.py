"""archdb.parts: the built-in parts of a model, one file each, spec and torch module together.

Each part module holds its plan specs (frozen dataclasses of plain numbers with
``params()``, ``flops(tally)``, ``cache_entries(context)`` and, for attentions, their decode
FLOPs and state) and, under ``modules()``, its torch modules. ``modules()`` imports torch and
defines the classes on first use, so the plan and the formulas that fold over it stay
torch-free; a spec answers ``module(ctx)`` with its built module, as the mixer plugins'
specs do (``archdb.mixers``).

- ``norms``: norm specs, where a block's norms sit, QK norms;
- ``positions``: absolute, rotary, ALiBi and relative position schemes;
- ``kernels``: which keys a query scores (global, local, chunked; softmax or linear);
- ``attention``: head attention (MHA/GQA/MQA) and latent attention (MLA);
- ``sparse``: DSA's lightning indexer; ``compressed``: DeepSeek V4's compressed attention
  and mHC hyper-connections;
- ``mlp``: dense and gated MLPs over an activation rule; ``moe``: routers and experts;
- ``parallel``, ``shortcut``, ``shared``: parallel mixers, LongCat's shortcut block,
  Zamba2's shared blocks; ``blocks``: the residual, serial and parallel blocks and the stack.

The plan (``archdb.plan``) reads a card into these specs; the builder (``archdb.builder``)
folds them into a model. Nothing here imports either.
"""
