"""One transformers family, once: what its code fixes, and how to read and write its config.

A ``FamilySpec`` is everything archdb knows about one transformers ``model_type``:

- the choices its modeling code fixes (norm, placement, gating, positions, QK norm, bias,
  parallel blocks, RoPE layout) and its config class's defaults. import-hf fills a card
  with them; the card -> config direction refuses a card that differs on them, so a
  comparison never passes by building a different model;
- its config keys (``keys``, ``archdb_hf.keymap.Key``), each once: import-hf reads them
  into the card and the reference writes them back, and the generic fixed-choice check
  refuses what the keys do not carry; hooks only where a key cannot say it either way:
  ``read`` (config -> card, on import-hf's draft) and ``write`` (its extra keys and checks,
  wrapped in ``keymap.Writer``, the whole card -> config writer);
- the checkpoint tensor names (``names``, for loading weights), the measured logit error
  (``logit_error``: the family is logit-exact) and the output-changing fields its cards
  must record (``function_fields``).

A spec is declared as a difference from its parent family (``derive``), as transformers'
modular files declare a model as a difference from the one it copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

from archdb.choices.norms import NORMS
from archdb.schema import (
    Activation,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
    RopeLayout,
)
from archdb_hf.keymap import Key, Writer, from_keys, merged, read_activation

# fields a child never takes from its parent: they name or measure that one model_type
NOT_INHERITED = ("model_type", "module", "classes", "layer", "config_class", "model_class",
                 "write", "logit_error", "aliases")  # fmt: skip


@dataclass(frozen=True)
class FamilySpec:
    model_type: str
    # transformers' class stem X: XDecoderLayer, XConfig and XForCausalLM, unless named
    classes: str = ""
    layer: str = ""  # the decoder-layer class, cited as the source's locator
    config_class: str = ""  # transformers' config class (the reference builds it)
    model_class: str = ""  # ... and its causal-LM class
    module: str = ""  # transformers/models/<module>/modeling_<module>.py; "": the model_type
    parent: str | None = None  # the family this one is declared as a difference from

    # --- what the code fixes, and the config class's defaults ----------------------------
    norm: NormType = NormType.RMSNORM
    norm_position: NormPosition = NormPosition.PRE
    norm_affine: NormAffine = NormAffine.SCALE
    gated: bool = True  # act(gate(x)) * up(x), then down
    position: PositionType = PositionType.ROPE
    qk_norm: QKNorm = QKNorm.NONE
    fixed_bias: tuple[bool, bool, bool] | None = None  # (qkv, attn_out, mlp) set in code
    attention_bias_default: bool = False  # attention_bias when the config omits it
    mlp_bias: bool | None = False  # fixed in code, or None: the config's mlp_bias key
    parallel: bool = False
    shared_norm_in_parallel: bool | None = None
    tied_default: bool = False
    activation_default: str = "silu"
    rope_theta_default: float = 10000.0
    d_ff_default_ratio: int | None = None  # d_ff = ratio * d_model when the config omits it
    rotary_fraction_default: float | None = None
    eps_default: float | None = None  # None: the norm kind's default (archdb.choices.norms)
    # without layer_types / sliding_window_pattern
    default_pattern: tuple[LayerKind, ...] = (LayerKind.GLOBAL,)
    full_layer: LayerKind = LayerKind.GLOBAL  # the card kind of a "full_attention" layer
    sliding_everywhere: bool = False  # a non-null sliding_window applies to every layer
    linear_layer: LayerKind | None = None  # the card kind of a "linear_attention" layer
    conv_layer: LayerKind | None = None  # the card kind of a "conv" layer (LFM2)
    # layer_types spellings transformers normalizes on load (Granite 4.0-H: "mamba")
    type_aliases: tuple[tuple[str, str], ...] = ()
    # keys of the family's released (remote-code) configs its read hook takes on purpose,
    # though transformers' class neither defines nor reads them (archdb_hf.families.config_keys)
    released_keys: tuple[str, ...] = ()
    rope_layout: RopeLayout = RopeLayout.HALF_SPLIT  # rotate_half in the code; interleaved: pairs
    indexed_layer: bool = False  # DSA: an "indexed_attention" layer is full attention

    # --- config -> card (import-hf) ------------------------------------------------------
    imports: bool = True  # import-hf reads this model_type's configs
    read: Callable[[Any], None] | None = None  # choices that depend on config keys
    # the whole mapping, for families whose layers are not attention + MLP (Mamba-2)
    steps: tuple[Callable[[Any], None], ...] | None = None
    aliases: tuple[str, ...] = ()  # model_types read as this one (multimodal wrappers, remote code)

    # --- both directions: the config keys, each once ------------------------------------
    keys: tuple[Key, ...] = ()  # archdb_hf.keymap: read by import-hf, written by the reference
    # the layer kinds its code builds, and the activations (none: activation_default's)
    kinds: tuple[LayerKind, ...] = (LayerKind.GLOBAL,)
    builds_activations: tuple[Activation, ...] = ()
    lm_head_bias: bool = False  # the output head's bias, fixed in code
    # card values the code fixes beyond the fields above (path, value): set on import,
    # and a card stating another is refused
    fixed: tuple[tuple[str, Any], ...] = ()
    # card paths the hooks carry (a choice there is the card's; keys' paths are implied)
    free: tuple[str, ...] = ()

    # --- card -> config (the reference) --------------------------------------------------
    # the family's own writing beyond its keys (None: none); the spec holds the whole
    # writer (keymap.Writer: fixed choices checked, keys written, then this)
    write: Callable[[Any], dict] | None = None
    # where the config class keeps the norm epsilon and the RoPE base (None: nowhere,
    # the code fixes it); written for every card that records them
    eps_key: str | None = "rms_norm_eps"
    rope_key: str | None = "rope_parameters"
    extras: frozenset[str] = frozenset()  # optional mechanisms it builds (reference.EXTRAS)
    decoder_only_of: str | None = None  # count only this submodule (multimodal models)

    # --- weights and fidelity -------------------------------------------------------------
    names: Callable[[], Any] | None = None  # archdb_hf.weights.Names of its checkpoints
    logit_error: float | None = None  # measured max relative logit error: logit-exact
    # output-changing fields whose null default is not this family's function
    function_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Choices are the schema's vocabulary: a spec written with plain strings is read
        into the enums, so a misspelt choice fails where the family is declared."""
        if not self.module:
            object.__setattr__(self, "module", self.model_type)
        named = {"layer": "DecoderLayer", "config_class": "Config", "model_class": "ForCausalLM"}
        for name, suffix in named.items() if self.classes else ():
            if not getattr(self, name):
                object.__setattr__(self, name, self.classes + suffix)
        for name, vocabulary in _CHOICES.items():
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, vocabulary(value))
        pattern = tuple(LayerKind(kind) for kind in self.default_pattern)
        object.__setattr__(self, "default_pattern", pattern)
        object.__setattr__(self, "kinds", tuple(LayerKind(kind) for kind in self.kinds))
        built = tuple(Activation(a) for a in self.builds_activations)
        object.__setattr__(self, "builds_activations", built)
        if not isinstance(self.write, Writer):  # no hook: the keys say everything
            object.__setattr__(self, "write", Writer(self, self.write or from_keys))

    @property
    def activations(self) -> tuple[Activation, ...]:
        """The activations the code builds: its default's unless stated."""
        if self.builds_activations:
            return self.builds_activations
        return (Activation(read_activation(self.activation_default, self.gated)),)

    @property
    def norm_eps_default(self) -> float:
        """The config class's epsilon default; unstated, the norm kind's own default."""
        if self.eps_default is not None:
            return self.eps_default
        return NORMS[self.norm].default_eps

    def derive(self, model_type: str, **changes: Any) -> FamilySpec:
        """A family declared as this one plus ``changes``; the fields that name or measure
        a model_type (``NOT_INHERITED``) start empty unless given."""
        fresh = {f.name: f.default for f in fields(self) if f.name in NOT_INHERITED}
        named = ("layer", "config_class", "model_class")
        missing = [k for k in named if k not in changes and "classes" not in changes]
        if missing:
            raise ValueError(f"{model_type}: a derived family names its own {', '.join(missing)}")
        own = {"model_type": model_type, "parent": self.model_type}
        if "keys" in changes:
            changes["keys"] = merged(self.keys, changes["keys"])
        return replace(self, **(fresh | own | changes))


_CHOICES = {
    "norm": NormType,
    "norm_position": NormPosition,
    "norm_affine": NormAffine,
    "position": PositionType,
    "qk_norm": QKNorm,
    "rope_layout": RopeLayout,
    "full_layer": LayerKind,
    "linear_layer": LayerKind,
    "conv_layer": LayerKind,
}
