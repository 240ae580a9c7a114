"""Bounded field types and the strict base model every card sub-model uses.

A leaf module (pydantic only): the schema and the mixer plugins (archdb.mixers), which the
schema reads, both build their sub-models from it.

Every size has an upper bound far above any real model, so that a typo or a hostile card
(n_layers: 1_000_000_000_000) is a located validation error rather than a hang or an
overflow in the code that computes with it. Real models sit orders of magnitude below:
d_model 18,432 (PaLM), 126 layers (Llama 3.1 405B), 262,144 vocabulary rows (Gemma 3),
a 10M-token context (Llama 4 Scout), 2T parameters, 36T training tokens (Qwen 3).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt

MAX_WIDTH = 2**20  # 1,048,576: d_model, d_ff, head_dim, latent ranks, embedding width
MAX_DEPTH = 100_000  # layers of a stack, dense leading layers, MoE layer period
MAX_COUNT = 2**20  # heads, experts, relative-position buckets
MAX_VOCAB = 2**24  # 16,777,216 embedding rows
MAX_CONTEXT = 2**30  # 1,073,741,824 tokens of context, window or learned rows
MAX_PARAMS = 10**15  # a quadrillion parameters
MAX_TOKENS = 10**17  # training tokens
MAX_MAGNITUDE = 1e12  # RoPE bases, soft-caps, decay and loss coefficients
MAX_PATTERN = MAX_DEPTH  # entries of a per-layer pattern
MAX_IMPLIED_PARAMS = 10**17  # what the sizes together imply: counts stay well inside int64

Width = Annotated[StrictInt, Field(gt=0, le=MAX_WIDTH)]
Depth = Annotated[StrictInt, Field(gt=0, le=MAX_DEPTH)]
DepthOrZero = Annotated[StrictInt, Field(ge=0, le=MAX_DEPTH)]
Count = Annotated[StrictInt, Field(gt=0, le=MAX_COUNT)]
CountOrZero = Annotated[StrictInt, Field(ge=0, le=MAX_COUNT)]
Vocab = Annotated[StrictInt, Field(gt=0, le=MAX_VOCAB)]
Tokens = Annotated[StrictInt, Field(gt=0, le=MAX_CONTEXT)]  # a length in tokens
ParamCount = Annotated[StrictInt, Field(gt=0, le=MAX_PARAMS)]
TokenCount = Annotated[StrictInt, Field(gt=0, le=MAX_TOKENS)]
PositiveFloat = Annotated[StrictFloat, Field(gt=0, le=MAX_MAGNITUDE, allow_inf_nan=False)]
Fraction = Annotated[StrictFloat, Field(ge=0, le=1, allow_inf_nan=False)]
NonNegativeFloat = Annotated[StrictFloat, Field(ge=0, le=MAX_MAGNITUDE, allow_inf_nan=False)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)
