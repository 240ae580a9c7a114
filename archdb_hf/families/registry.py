"""Every transformers family archdb knows, once (``SPECS``): one ``FamilySpec`` per
``model_type``, declared in the module of its lineage (``archdb_hf.families.gemma``, ...) as
a difference from its parent family.

import-hf (config -> card), the reference (card -> config), the checkpoint names and the
fidelity levels all read this table. A card reaches its family through the ``model_type``
its config source declares (``model_type_of``, ``resolve``); only cards whose sources do
not state it yet fall back to their catalogue family (``_BY_FAMILY``).
"""

from __future__ import annotations

import importlib
import re

from archdb.schema import Card
from archdb_hf.families.spec import FamilySpec

# one module per lineage (archdb_hf.families.<name>); each declares its families after its
# parents', and a lineage after the ones it derives from
_LINEAGES = tuple(
    importlib.import_module(f"archdb_hf.families.{name}")
    for name in ("llama", "bitnet", "gpt", "qwen", "mimo", "ernie", "hunyuan", "granite",
                 "olmo", "cohere", "gemma", "deepseek", "minimax", "lfm2", "ssm", "rwkv",
                 "t5", "bert", "xlstm")
)  # fmt: skip
SPECS: dict[str, FamilySpec] = {
    spec.model_type: spec
    for lineage in _LINEAGES
    for spec in vars(lineage).values()
    if isinstance(spec, FamilySpec)
}
# model_types read as another (multimodal wrappers, remote code) -> that family
ALIASES: dict[str, str] = {
    a: s.model_type
    for s in SPECS.values()
    for a in (*s.aliases, *([s.released_as] if s.released_as else []))
}

# the model classes transformers names after a decoder layer's prefix (LlamaDecoderLayer:
# LlamaForCausalLM, LlamaModel); a class name matches a family only with one of these
_MODEL_CLASS_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration", "Model")


def resolve(
    model_type: str, classes: list[str] | tuple[str, ...] = ()
) -> tuple[str, str | None] | None:
    """The family of a config's ``model_type`` (through the aliases), or else of the model
    class its ``architectures`` name (Kimi K2's custom ``kimi_k2`` is a
    ``DeepseekV3ForCausalLM``), with how it was recognised; None when no family matches."""
    found = ALIASES.get(model_type, model_type)
    if found in SPECS:
        return found, None
    for name in classes:
        for spec in SPECS.values():
            prefix = re.sub(r"(DecoderLayer|Layer|Block)$", "", spec.layer)
            if name.startswith(prefix) and name[len(prefix) :] in _MODEL_CLASS_SUFFIXES:
                return spec.model_type, (
                    f"the config's model_type {model_type!r} is custom, its architectures "
                    f"name {name}"
                )
    return None


# --- routing a card to its family --------------------------------------------------------


def model_type_of(card: Card) -> str | None:
    """The transformers family of a card: the one its config source declares
    (``Source.model_type``, and the model class it names), else, for cards whose sources
    do not state it yet, the catalogue family's (``_BY_FAMILY``); None when transformers
    has no family for it."""
    for source in card.sources:
        if source.model_type is not None:
            found = resolve(source.model_type, [source.model_class] if source.model_class else [])
            return found[0] if found is not None else None
    model_type = _BY_FAMILY.get(card.family)
    if model_type is not None and card.architecture.mlp.moe is not None:
        model_type = _MOE_OF.get(model_type, model_type)
    return model_type


# Cards whose sources do not yet state their config's model_type: catalogue family -> the
# transformers model type that implements it (GPT-3 under GPT-2: its paper reuses GPT-2's
# architecture). A card leaves this table when its config source states its model_type.
_BY_FAMILY: dict[str, str] = {
    "bert": "bert",
    "roberta": "roberta",
    "gpt-1": "openai-gpt",
    "xglm": "xglm",
    "ctrl": "ctrl",
    "gpt-2": "gpt2",
    "gpt-3": "gpt2",
    "gpt-j": "gptj",
    "gpt-neox": "gpt_neox",
    "pythia": "gpt_neox",
    "opt": "opt",
    "opt-iml": "opt",  # OPT instruction-tuned: OPT's architecture (metaseq's launcher)
    "llama": "llama",
    "internlm": "llama",  # InternLM (v1): Llama with biased q, k, v and o (its remote code)
    "baichuan": "llama",  # Baichuan-7B: Llama with q, k, v fused (W_pack, its remote code)
    "llama-2": "llama",
    "llama-3": "llama",
    "llama-3.1": "llama",
    "llama-3.2": "llama",
    "llama-3.3": "llama",
    "llama-4": "llama4_text",
    "mistral": "mistral",
    "mistral-nemo": "mistral",
    "mixtral": "mixtral",
    "phi-3": "phi3",
    "phi-4": "phi3",
    "smollm2": "llama",
    "smollm3": "smollm3",
    "ernie-4.5": "ernie4_5",
    "exaone-4": "exaone4",
    "seed-oss": "seed_oss",
    "qwen2": "qwen2",
    "qwen2.5": "qwen2",
    "qwen3": "qwen3",
    "gemma": "gemma",
    "gemma-2": "gemma2",
    "gemma-3": "gemma3_text",
    "gemma-4": "gemma4_text",
    "gemma-3n": "gemma3n_text",
    "olmo": "olmo",
    "olmo-2": "olmo2",
    "olmo-3": "olmo3",
    "falcon": "falcon",
    "falcon-2": "falcon",
    "command-r": "cohere",
    "command-r-plus": "cohere",
    "command-a": "cohere2",
    "nemotron-4": "nemotron",
    "deepseek-v2": "deepseek_v2",
    "deepseek-v3": "deepseek_v3",
    "minimax-m2": "minimax_m2",
    "kimi-k2": "deepseek_v3",  # config.json: model_type kimi_k2, DeepseekV3ForCausalLM
    "deepseek-v3.2": "deepseek_v32",
    "glm-5": "glm_moe_dsa",
    "t5": "t5",
    "t5-v1.1": "t5",
    "flan-t5": "t5",  # T5 1.1's architecture, released as model_type t5
    "byt5": "t5",  # likewise, over bytes
    "mt5": "mt5",
    "switch-transformer": "switch_transformers",
    "phi-2": "phi",
    "phi-1.5": "phi",
    "chameleon": "chameleon",
    "mamba-2": "mamba2",
    "mamba2": "mamba2",  # the catalogue's Mamba-2 cards
    "bamba": "bamba",
    "mamba": "mamba",
    "falcon-mamba": "falcon_mamba",
    "jamba": "jamba",
    "jamba-1.5": "jamba",
    "gpt-oss": "gpt_oss",
    "apertus": "apertus",
    "qwen3-next": "qwen3_next",
    "granite-3.0": "granite",
    "granite-3.1": "granite",
    "granite-3.3": "granite",
    "granite-4.1": "granite",
    "lfm2": "lfm2",
    "lfm2.5": "lfm2",
    "nemotron-h": "nemotron_h",
    "nemotron-3": "nemotron_h",
    "qwen3.5": "qwen3_5_text",
    "qwen3.6": "qwen3_5_text",  # Qwen3.6's configs are model_type qwen3_5 / qwen3_5_moe
    "kimi-linear": "kimi_linear",
    "minimax-01": "minimax",
    "recurrentgemma": "recurrent_gemma",
    "griffin": "recurrent_gemma",
    "zamba2": "zamba2",
    "longcat-flash": "longcat_flash",
    "bitnet": "bitnet",
    "hunyuan": "hunyuan_v1_dense",
}
_MOE_OF: dict[str, str] = {
    "qwen3": "qwen3_moe",
    "granite": "granitemoe",
    "lfm2": "lfm2_moe",
    "qwen3_5_text": "qwen3_5_moe_text",
    "ernie4_5": "ernie4_5_moe",
    "hunyuan_v1_dense": "hunyuan_v1_moe",
}


# the families whose tiny checkpoints archdb reproduces, with the measured error (a view)
LOGIT_EXACT: dict[str, float] = {
    m: s.logit_error for m, s in SPECS.items() if s.logit_error is not None
}
