"""transformers as the reference: its models built from a card's config, and counted.

The card -> config writers live with the family specs (``archdb.families``); this module
is the half that imports transformers, for the tests and benchmarks only.
"""

from __future__ import annotations

from archdb.families.card_to_config import convert
from archdb.families.registry import SPECS
from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture

# Sizes transformers' default config of a family leaves unset (None), which its model cannot
# be built without; released configs set them (the test and benchmark of default configs).
DEFAULT_COMPLETIONS: dict[str, dict] = {
    "nemotron": {"num_key_value_heads": 48},
    "deepseek_v2": {"num_experts_per_tok": 6},
    # 4096 / 96 heads is not whole: transformers floors it to 42, released configs say
    "glm4_moe": {"head_dim": 128},
    # Lfm2MoeConfig leaves layer_types unset and its layers cannot be built without it
    # HunYuan configs leave head_dim None, which transformers' attention cannot size
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    "lfm2_moe": {
        "layer_types": [
            "full_attention" if i in (2, 6, 10, 14, 18, 21, 24, 27) else "conv" for i in range(32)
        ]
    },
}

# The transformers release that stopped sizing LongCat-Flash's expert tensors for the
# zero-computation experts: up to 5.24, LongcatFlashExperts' gate_up_proj held
# n_routed + zero_expert_num rows (saved as gate/up tensors of experts numbered from
# n_routed on) and down_proj n_routed, and only the first n_routed were ever read.
LONGCAT_ZERO_ROWS_DROPPED_IN = (5, 25)


def transformers_release() -> tuple[int, int]:
    """The installed transformers' (major, minor) release."""
    import transformers

    major, minor = transformers.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def allocates_zero_expert_rows() -> bool:
    """Whether the installed transformers sizes LongCat-Flash's expert tensors for its
    zero-computation experts too (releases before ``LONGCAT_ZERO_ROWS_DROPPED_IN``)."""
    return transformers_release() < LONGCAT_ZERO_ROWS_DROPPED_IN


def hf_parameter_count(arch: Architecture, model_type: str) -> int:
    """Parameters of transformers' model for this architecture, built on the meta device."""
    import torch
    import transformers

    spec = SPECS[model_type]
    arch, _ = fill_unknowns(arch)
    # special-token ids are not parameters; the configs' defaults may lie outside a toy's
    # vocabulary, which transformers warns about or refuses
    kwargs = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None}
    kwargs |= convert(arch, model_type)
    config = getattr(transformers, spec.config_class)(**kwargs)
    with torch.device("meta"):
        model = getattr(transformers, spec.model_class)(config)
    skip = set()
    if spec.decoder_only_of is not None:
        for name, module in model.named_modules():
            if name.endswith(spec.decoder_only_of):
                skip |= {id(p) for p in module.parameters()}
    # frozen statistics (requires_grad false: ERNIE 4.5's correction bias) are buffers in
    # archdb, as DeepSeek-V3's correction bias is in transformers: not parameters
    skip |= {id(p) for p in model.parameters() if not p.requires_grad}
    total = sum(p.numel() for p in model.parameters() if id(p) not in skip)
    return total - unread_expert_rows(model)


def unread_expert_rows(model) -> int:
    """Entries of fused expert tensors no forward pass reads: the zero-computation
    experts' rows of LongcatFlashExperts' gate_up_proj in transformers before 5.25
    (``LONGCAT_ZERO_ROWS_DROPPED_IN``; none from 5.25 on); archdb's zero experts have no
    parameters."""
    unread = 0
    for module in model.modules():
        gate_up, down = getattr(module, "gate_up_proj", None), getattr(module, "down_proj", None)
        if type(module).__name__ != "LongcatFlashExperts" or gate_up is None or down is None:
            continue
        unread += (gate_up.shape[0] - down.shape[0]) * gate_up[0].numel()
    return unread
