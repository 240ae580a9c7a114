"""A family's config keys, each declared once (``Key``), and what is derived from them.

A ``Key`` names one key of a transformers config and the card field it holds. A family
lists its keys beside its fixed choices (``archdb_hf.families.spec.FamilySpec``), and both
directions follow from the list: import-hf reads every key into its field
(``archdb_hf.draft.read_keys``), and the reference writes every field back under its key
(``write_keys``). The fixed choices the keys do not carry are checked once for every
family (``archdb_hf.families.spec.check_fixed``), so a card that differs from them is
refused, never compared with a different model. This module knows neither the draft nor
the family spec: both build on it.

Hooks remain for what a key cannot say one way or the other: a value computed from
several fields, a list spelled per layer, a switch that picks among layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from archdb.schema import Architecture, GeluApproximation, LayerKind


class NotRepresentable(ValueError):
    """The card asks for something the family's transformers code cannot build."""


def require(ok: bool, message: str) -> None:
    if not ok:
        raise NotRepresentable(message)


@dataclass(frozen=True)
class Key:
    """One config key and the card field (``path``, under ``architecture``) it holds.

    ``default`` is the config class's value when a config leaves the key out; ``required``
    refuses a config without it. ``kind``: a key of one layer kind's part (a mixer's
    sizes), read (and required) only where the layer pattern has the kind. ``when``
    writes the key only for the cards it holds for; ``out`` writes a value computed from
    the card, ``into`` reads the config's value into the field's; ``also``: other
    spellings import-hf reads. ``read=False``: import-hf's generic steps read the key
    (under its other spellings too), the map only writes it. A key without path or
    ``out`` removes the parent family's key of that name.
    """

    name: str
    path: str | None = None
    default: Any = None
    required: bool = False
    when: Callable[[Architecture], bool] | None = None
    out: Callable[[Architecture], Any] | None = None
    into: Callable[[Any], Any] | None = None
    read: bool = True
    also: tuple[str, ...] = ()  # other spellings import-hf accepts
    given: str | None = None  # read only where the draft holds this field (an MoE's keys)
    kind: str | None = None  # a layer kind: read only where layers have it

    @property
    def removed(self) -> bool:
        return self.path is None and self.out is None


def part_keys(
    part: str,
    spelled: dict[str, str],
    defaults: dict[str, Any] | None = None,
    *,
    required: Iterable[str] = (),
    kind: str | None = None,
) -> tuple[Key, ...]:
    """The keys of one part's fields (field -> config key, under ``part``), with the config
    class's defaults; with ``kind``, read where layers have it and written for cards that
    have them (a hybrid's mixer sizes)."""
    defaults, required = defaults or {}, set(required)
    when = uses(LayerKind(kind)) if kind else None
    return tuple(
        Key(name, f"{part}.{field}", default=defaults.get(field), required=field in required,
            kind=kind, when=when)
        for field, name in spelled.items()
    )  # fmt: skip


def dropped(keys: Iterable[Key | str]) -> tuple[Key, ...]:
    """Keys that remove each of ``keys`` (or key names) from a derived family."""
    return tuple(Key(k if isinstance(k, str) else k.name) for k in keys)


def merged(parent: Iterable[Key], own: Iterable[Key]) -> tuple[Key, ...]:
    """A child's keys: the parent's, each replaced by the child's key of the same name
    (or removed by it), then the child's new ones."""
    mine = {k.name: k for k in own}
    keys = [mine.pop(k.name, k) for k in parent] + list(mine.values())
    return tuple(k for k in keys if not k.removed)


def value_at(arch: Architecture, path: str) -> Any:
    """The card's value at a dotted path; None when a sub-model on the way is null."""
    value: Any = arch
    for part in path.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    return value


# position.rope_scaling's fields as rope_parameters keys, per scaling type (factor for all):
# import-hf reads them, the reference writes them
ROPE_SCALING_KEYS: dict[str, dict[str, str]] = {
    "linear": {},
    "dynamic": {"original_context": "original_max_position_embeddings"},
    "yarn": {
        "original_context": "original_max_position_embeddings",
        "beta_fast": "beta_fast",
        "beta_slow": "beta_slow",
        "truncate": "truncate",
        "mscale": "mscale",
        "mscale_all_dim": "mscale_all_dim",
    },
    "llama3": {
        "original_context": "original_max_position_embeddings",
        "low_freq_factor": "low_freq_factor",
        "high_freq_factor": "high_freq_factor",
    },
    "longrope": {
        "original_context": "original_max_position_embeddings",
        "short_factor": "short_factor",
        "long_factor": "long_factor",
        "attention_factor": "attention_factor",
    },
}


# --- config -> card ----------------------------------------------------------------------


MOE_LAYOUT = {"n_shared": 0, "first_dense_layers": 0, "layer_period": 1}


# --- card -> config ----------------------------------------------------------------------


def write_keys(keys: Iterable[Key], arch: Architecture) -> dict:
    config: dict = {}
    for key in keys:
        if key.when is not None and not key.when(arch):
            continue
        config[key.name] = key.out(arch) if key.out else value_at(arch, key.path)
    return config


def from_keys(arch: Architecture) -> dict:
    """A family whose keys say everything: no keys of its own beyond them."""
    return {}


def has_moe(arch: Architecture) -> bool:
    """Write only for cards with a mixture of experts."""
    return arch.mlp.moe is not None


def uses(kind: LayerKind) -> Callable[[Architecture], bool]:
    """Write only for cards with layers of this kind."""
    return lambda arch: kind in arch.attention.layer_pattern


_GELU = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "gelu_accurate",
         "gelu_tanh"}  # fmt: skip


def read_activation(raw: str, gated: bool) -> str | None:
    """A config's activation name as the card's (gated or not, as the family's MLP)."""
    name = raw.lower()
    if name in _GELU:
        return "geglu" if gated else "gelu"
    if name in ("silu", "swish"):
        return "swiglu" if gated else "silu"
    if name == "relu":
        return "reglu" if gated else "relu"
    if name in ("relu2", "squared_relu", "relu_squared"):
        return "squared-reglu" if gated else "squared-relu"
    if name == "xielu" and not gated:  # Apertus: up, xIELU, down
        return "xielu"
    if name == "quick_gelu" and not gated:  # x * sigmoid(1.702 x), no GELU form
        return "quick-gelu"
    return None


# --- keys several families share ---------------------------------------------------------


def one_bias_flag(arch: Architecture) -> bool:
    """The one config flag for the biases of q, k, v, o and the MLP: the card's agree."""
    b = arch.bias
    require(b.qkv == b.attn_out == b.mlp, "one bias flag covers q, k, v, o and the MLP")
    return b.qkv


def gelu_key(name: str, tanh: str) -> Key:
    """The activation key of a GELU family: "gelu" (ACT2FN's erf form) where the card's
    GELU is exact, else the family's spelling of the tanh form."""

    def out(arch: Architecture) -> str:
        return "gelu" if arch.mlp.gelu_approximation is GeluApproximation.EXACT else tanh

    return Key(name, "mlp.gelu_approximation", out=out, read=False)


def key_or(name: str, path: str, fallback: Any, **given: Any) -> Key:
    """A key written as the card's value at ``path``, or where that is null as ``fallback``
    (a value, or one computed from the card): what the config class assumes without it."""

    def out(arch: Architecture) -> Any:
        value = value_at(arch, path)
        if value is not None:
            return value
        return fallback(arch) if callable(fallback) else fallback

    return Key(name, path, out=out, **given)


def sliding_window_key(default: int) -> Key:
    """sliding_window, written as the card's window, else the config class's default."""
    return key_or("sliding_window", "attention.sliding_window", default, read=False)


def normalizes_top_k(arch: Architecture) -> bool:
    """norm_topk_prob for the card's MoE: null renormalizes, as archdb's builder does."""
    return arch.mlp.moe.normalize_top_k is not False


# intermediate_size beside experts of moe_intermediate_size: the dense MLPs' width, the
# experts' where the card has no dense MLP
DENSE_D_FF = key_or("intermediate_size", "mlp.moe.dense_d_ff", lambda a: a.mlp.d_ff, read=False)
