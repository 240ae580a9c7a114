"""transformers as the reference: its models built from a card's config, and counted.

The card -> config writers live with the family specs (``archdb_hf.families``); this module
is the half that imports transformers, for the tests and benchmarks only.
"""

from __future__ import annotations

from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture
from archdb_hf.draft import OUTER_KEYS
from archdb_hf.families.registry import SPECS
from archdb_hf.families.spec import FamilySpec
from archdb_hf.reference import convert, saved_config

# Sizes transformers' default config of a family leaves unset (None), which its model cannot
# be built without; released configs set them (the test and benchmark of default configs).
DEFAULT_COMPLETIONS: dict[str, dict] = {
    "nemotron": {"num_key_value_heads": 48},
    # DbrxAttention reads attn_config.rope_theta, which DbrxAttentionConfig does not define
    "dbrx": {"attn_config": {"rope_theta": 10000.0}},
    "deepseek_v2": {"num_experts_per_tok": 6},
    # 4096 / 96 heads is not whole: transformers floors it to 42, released configs say
    "glm4_moe": {"head_dim": 128},
    # Lfm2MoeConfig leaves layer_types unset and its layers cannot be built without it
    # HunYuan configs leave head_dim None, which transformers' attention cannot size
    "hunyuan_v1_dense": {"head_dim": 128},
    "hunyuan_v1_moe": {"head_dim": 128},
    # SwitchTransformersConfig's 3 sparse of 12 layers (1, 5, 9) is no released layout; the
    # released Switch models have experts in every second layer (6 of 12)
    "switch_transformers": {"num_sparse_encoder_layers": 6, "num_sparse_decoder_layers": 6},
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
    config = reference_config(spec, convert(arch, model_type))
    with torch.device("meta"):
        model = getattr(transformers, spec.model_class)(config)
    return card_parameters(model, spec)


def card_parameters(model, spec: FamilySpec) -> int:
    """The parameters of transformers' ``model`` a card of ``spec`` counts: not a
    multimodal release's other parts (``decoder_only_of``), not frozen statistics
    (requires_grad false: ERNIE 4.5's correction bias, a buffer in archdb as DeepSeek-V3's
    is in transformers), not expert rows no forward pass reads."""
    skip = set()
    if spec.decoder_only_of is not None:
        for name, module in model.named_modules():
            if name.endswith(spec.decoder_only_of):
                skip |= {id(p) for p in module.parameters()}
    skip |= {id(p) for p in model.parameters() if not p.requires_grad}
    total = sum(p.numel() for p in model.parameters() if id(p) not in skip)
    return total - unread_expert_rows(model)


def reference_config(spec: FamilySpec, written: dict):
    """transformers' config of a written card: its family's config class, or for a text
    decoder built only inside its multimodal release, the release's config holding it as
    text_config and the keys it keeps outside it (its vision tower keeps its defaults)."""
    import transformers

    # special-token ids are not parameters; the configs' defaults may lie outside a toy's
    # vocabulary, which transformers warns about or refuses
    kwargs = {"bos_token_id": None, "eos_token_id": None, "pad_token_id": None} | written
    if spec.released_as is None:
        return getattr(transformers, spec.config_class)(**kwargs)
    saved = saved_config(kwargs, spec.model_type)  # as the release's config.json holds it
    return transformers.AutoConfig.for_model(saved.pop("model_type"), **saved)


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


def config_keys_table() -> dict:
    """The table ``archdb_hf.families.config_keys`` reads, from the installed transformers:
    each supported model type's default config keys, ``attribute_map`` aliases, and the
    attributes its modeling file reads off the config (``config.x``, ``getattr(config,
    "x", ...)``: a model may read a key its class does not define, such as head_dim)."""
    import importlib
    import inspect
    import re

    import transformers

    read = re.compile(
        r"""config\.([a-z_][a-z0-9_]*)|getattr\(\s*config\s*,\s*["']([a-z_0-9]+)["']"""
    )
    pops = re.compile(r"""kwargs\.(?:pop|get)\(\s*["']([a-z_0-9]+)["']""")
    # every config class consumes what its base class and the RoPE standardization take
    # (legacy rope_scaling and rope_theta among them)
    base = set()
    for name in ("configuration_utils", "modeling_rope_utils"):
        base |= set(
            pops.findall(inspect.getsource(importlib.import_module(f"transformers.{name}")))
        )
    base |= {"rope_scaling", "rope_theta"}
    keys = {}
    for model_type in sorted(SPECS):
        config = transformers.AutoConfig.for_model(model_type)
        module = SPECS[model_type].module or model_type
        source = inspect.getsource(
            importlib.import_module(f"transformers.models.{module}.modeling_{module}")
        )
        used = {a or b for a, b in read.findall(source)}
        # keys the config class consumes on load without keeping them (legacy names)
        setup = inspect.getsource(importlib.import_module(type(config).__module__))
        consumed = set(pops.findall(setup)) | base
        consumed |= set(inspect.signature(type(config).__init__).parameters) - {"self", "kwargs"}
        own = set(config.to_dict()) | set(config.attribute_map) | used | consumed
        spec = SPECS[model_type]
        # a decoder released inside a multimodal model obeys the release's own tie switch
        outer = set(OUTER_KEYS) if spec.released_as else set()
        keys[model_type] = sorted(own | set(spec.released_keys) | outer)
    return {"transformers": transformers.__version__, "keys": keys}


def write_config_keys() -> None:
    """Regenerate archdb_hf/families/config_keys.json from the installed transformers."""
    import json
    from pathlib import Path

    from archdb_hf.families import config_keys

    path = Path(config_keys.__file__).with_name(config_keys.TABLE)
    path.write_text(json.dumps(config_keys_table(), indent=1) + "\n", encoding="utf-8")
