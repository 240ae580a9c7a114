"""The catalogue card closest to a config.json that ``import-hf`` cannot map.

An unsupported ``model_type`` still names its sizes with the keys most transformers configs
share (``hidden_size``, ``num_key_value_heads``, ``num_local_experts``, ...). The features
read from those keys are compared with every card's; the family name counts too (a
``llama4_text`` config is a Llama). The card that agrees most is where ``archdb new --like``
should start. Plain Python, linear in the number of cards; hostile values are skipped.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from archdb.schema import Card

# feature -> config keys that give it, in the spellings transformers configs use
_KEYS: dict[str, tuple[str, ...]] = {
    "d_model": ("hidden_size", "n_embd", "d_model"),
    "n_layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "n_heads": ("num_attention_heads", "n_head", "num_heads"),
    "n_kv_heads": ("num_key_value_heads", "num_kv_heads", "multi_query_group_num"),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "latent": ("kv_lora_rank",),
    "window": ("sliding_window", "attention_window_size"),
    "activation": ("hidden_act", "hidden_activation", "activation_function"),
}


@dataclass(frozen=True)
class Match:
    card: Card
    score: float
    shared: tuple[str, ...]  # the features the config and the card agree on


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 10**12:
        return None
    return value


def config_features(config: Mapping[str, Any]) -> dict[str, Any]:
    """The comparable features a config states (its ``text_config`` for multimodal ones)."""
    text = config.get("text_config")
    source = text if isinstance(text, Mapping) else config
    found: dict[str, Any] = {}
    for feature, keys in _KEYS.items():
        value = next((source[k] for k in keys if k in source), None)
        if feature == "activation":
            if isinstance(value, str) and len(value) < 100:
                found[feature] = value.lower()
        elif feature == "window":
            found[feature] = _int(value) is not None
        elif feature in ("experts", "latent"):
            found[feature] = (_int(value) or 0) > 0
        elif _int(value) is not None:
            found[feature] = value
    heads, kv = found.get("n_heads"), found.get("n_kv_heads")
    if heads and kv:
        found["attention"] = "mha" if kv == heads else ("mqa" if kv == 1 else "gqa")
    model_type = source.get("model_type", config.get("model_type"))
    if isinstance(model_type, str):
        found["model_type"] = model_type[:100]
    return found


def _card_features(card: Card) -> dict[str, Any]:
    arch = card.architecture
    windowed = any(k.value in ("local", "chunked") for k in arch.attention.layer_pattern)
    return {
        "d_model": arch.d_model,
        "n_layers": arch.n_layers,
        "attention": arch.attention_family,
        "experts": arch.mlp.moe is not None,
        "latent": arch.attention_family == "mla",
        "window": windowed,
        "gated": arch.gated,
    }


def _name_similarity(model_type: str, family: str) -> float:
    """How alike a model_type and a family slug read: llama4_text ~ llama-4."""

    def norm(s: str) -> str:
        return re.sub(r"[^a-z0-9]", "", s.lower().removesuffix("_text"))

    return difflib.SequenceMatcher(None, norm(model_type), norm(family)).ratio()


def _size_closeness(a: int | None, b: int | None) -> float:
    if not a or not b:
        return 0.0
    return max(0.0, 1.0 - abs(math.log2(a / b)) / 4)  # 1 when equal, 0 at 16x apart


def closest_card(config: Mapping[str, Any], cards: Iterable[Card]) -> Match | None:
    """The card whose architecture and family name agree most with the config's."""
    features = config_features(config)
    gated = None
    if "activation" in features:
        gated = features["activation"] in ("silu", "swish")  # SwiGLU configs say silu
    best: Match | None = None
    for card in cards:
        if card.research_variant:
            continue
        theirs = _card_features(card)
        shared: list[str] = []
        score = 0.0
        for key in ("attention", "experts", "latent", "window"):
            if key in features and features[key] == theirs[key]:
                score += 1.0
                if features[key] is not False:  # name what they have, not what both lack
                    shared.append(key)
        if gated is not None and gated == theirs["gated"]:
            score += 0.5
            shared.append("gated")
        for key in ("d_model", "n_layers"):
            closeness = _size_closeness(features.get(key), theirs[key])
            score += 0.5 * closeness
            if closeness > 0.9:
                shared.append(key)
        if "model_type" in features:
            similarity = _name_similarity(features["model_type"], card.family)
            score += 2.0 * similarity
            if similarity > 0.7:
                shared.append("family")
        if best is None or score > best.score:
            best = Match(card, round(score, 3), tuple(shared))
    return best
