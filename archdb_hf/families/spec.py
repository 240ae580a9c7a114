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
  wrapped in ``Writer``, the whole card -> config writer);
- the checkpoint tensor names (``names``, for loading weights), the measured logit error
  (``logit_error``: the family is logit-exact, else ``unverified`` says why not) and the
  output-changing fields its cards must record (``function_fields``).

A spec is declared as a difference from its parent family (``derive``), as transformers'
modular files declare a model as a difference from the one it copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from archdb.choices.norms import NORMS
from archdb.schema import (
    Activation,
    Architecture,
    AttentionVariant,
    Kind,
    LayerKind,
    NormAffine,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
    RopeLayout,
)
from archdb_hf.keymap import (
    MOE_LAYOUT,
    Key,
    from_keys,
    merged,
    read_activation,
    require,
    value_at,
    write_keys,
)

# fields a child never takes from its parent: they name or measure that one model_type
NOT_INHERITED = ("model_type", "module", "classes", "layer", "config_class", "model_class",
                 "write", "logit_error", "unverified", "aliases", "released_as",
                 "released_form")  # fmt: skip


@dataclass(frozen=True)
class FamilySpec:
    model_type: str
    # transformers' class stem X: XDecoderLayer, XConfig and XForCausalLM, unless named
    classes: str = ""
    layer: str = ""  # the decoder-layer class, cited as the source's locator
    config_class: str = ""  # transformers' config class (the reference builds it)
    model_class: str = ""  # ... and its causal-LM class
    # a text decoder transformers builds only inside its multimodal release (Qwen3-VL): the
    # release's model_type, whose config holds config_class's keys as its text_config and
    # the tie_word_embeddings switch (read as this family); model_class is the release's
    released_as: str | None = None
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
    # an alias's remote-code config spelled as config_class's keys (None: already in its
    # format), as transformers' conversion of those checkpoints spells it (ChatGLM -> Glm)
    released_form: Callable[[Any], dict | None] | None = None

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
    # writer (Writer: fixed choices checked, keys written, then this)
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
    unverified: str = ""  # without logit_error: why outputs are not compared, if known
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


# --- the card -> config writer, and the check of the fixed choices ---------------------


@dataclass(frozen=True, eq=False)
class Writer:
    """A family's card -> config writer: its fixed choices checked, its keys written, then
    its own hook (keys no ``Key`` can write, and checks of its own)."""

    spec: FamilySpec = field(repr=False)
    hook: Callable[[Architecture], dict]

    def __call__(self, arch: Architecture) -> dict:
        check_fixed(self.spec, arch)
        own = self.hook(arch)  # its checks first: a key's value may rely on them
        return write_keys(self.spec.keys, arch) | own


def covered(spec: FamilySpec) -> set[str]:
    """The card paths the family's config carries (its keys, and the fields its hooks
    own): choices there are the card's, not fixed."""
    paths = {k.path for k in spec.keys if k.path} | set(spec.free) | {p for p, _ in spec.fixed}
    return paths | {p.rsplit(".", 1)[0] for p in paths if p.startswith("mlp.moe.")}


def check_fixed(spec: FamilySpec, arch: Architecture) -> None:
    """NotRepresentable naming the first choice the card makes differently from the
    family's code: norms, blocks, activation, attention, positions, layers, MLP, biases;
    a choice one of the family's keys carries is the card's to make."""
    free = covered(spec)
    n = arch.norm
    for name, want in (
        ("type", spec.norm),
        ("affine", spec.norm_affine),
        ("position", spec.norm_position),
    ):
        if f"norm.{name}" not in free:
            got = getattr(n, name)
            require(got is want, f"norm.{name} must be {want.value}")
    if "norm.final" not in free:
        require(n.final is True, "norm.final must be True")
    if "parallel_layers" not in free:
        if spec.parallel:
            require(bool(arch.parallel_layers), "parallel_layers must be true")
            shared = bool(spec.shared_norm_in_parallel)
            require(
                bool(n.shared_in_parallel) is shared, f"norm.shared_in_parallel must be {shared}"
            )
        else:
            require(not arch.parallel_layers, "parallel_layers must be false")
    if "mlp.activation" not in free:
        allowed = spec.activations
        require(
            arch.mlp.activation in allowed,
            f"mlp.activation must be one of {', '.join(x.value for x in allowed)}",
        )
    if "attention.variant" not in free:
        variant = arch.attention.variant
        require(variant is AttentionVariant.SOFTMAX, "attention.variant must be softmax")
    if "attention.qk_norm" not in free:
        qk = spec.qk_norm
        require(arch.attention.qk_norm is qk, f"attention.qk_norm must be {qk.value}")
    if "position.type" not in free:
        require(arch.position.type is spec.position,
                f"position.type must be one of {spec.position.value}")  # fmt: skip
    _check_sizes(spec, arch, free)
    layout = arch.position.rope_layout
    if arch.position.type is PositionType.ROPE and "position.rope_layout" not in free:
        require(layout in (None, spec.rope_layout),
                f"position.rope_layout must be {spec.rope_layout.value}")  # fmt: skip
    for path, value in spec.fixed:
        got = value_at(arch, path)
        require(
            got is None or got == value,
            f"{path} {_shown(value)} ({spec.model_type}'s code fixes it)",
        )
    if spec.sliding_everywhere:
        require(len(set(arch.attention.layer_pattern)) == 1, "one kind of layer: local or global")
    kinds = set(spec.kinds)
    require(
        set(arch.attention.layer_pattern) <= kinds,
        f"layer_pattern may use only {', '.join(x.value for x in spec.kinds)}",
    )
    pattern = arch.attention.layer_pattern
    for key in spec.keys:  # the optional parts (an MoE, MLA, an indexer) its config requires
        part = (key.path or "").rpartition(".")[0]
        if key.required and "." in part and key.kind in (None, *pattern):
            require(value_at(arch, part) is not None,
                    f"{part}: {spec.model_type}'s config requires {key.name}")  # fmt: skip
    if "mlp.moe" not in free:
        require(arch.mlp.moe is None, "a dense MLP (mlp.moe null)")
    elif arch.mlp.moe is not None:
        moe = arch.mlp.moe
        wrong = [
            f"mlp.moe.{name} {value}"
            for name, value in MOE_LAYOUT.items()
            if f"mlp.moe.{name}" not in free and getattr(moe, name) != value
        ]
        require(not wrong, f"{spec.model_type}'s MoE layout fixes {', '.join(wrong)}")
    _check_bias(spec, arch, free)


def _check_sizes(spec: FamilySpec, arch: Architecture, free: set[str]) -> None:
    """A causal LM whose core sizes are known; and where no key or hook of the family
    carries them, the sizes its code builds (as import-hf reads them): every head dim
    rotates (or the code's share), one key/value head per query head, one width for every
    layer and embeddings of d_model, heads of d_model / n_heads with values as wide, an
    MLP in every attention layer (d_ff_default_ratio x d_model wide where no key sets it),
    a QK norm of the blocks' own kind."""
    a = arch.attention
    if "kind" not in free:
        require(arch.kind is Kind.DECODER_ONLY, "kind decoder-only (a causal LM)")
    sizes = {"d_model": arch.d_model, "n_layers": arch.n_layers, "vocab_size": arch.vocab_size}
    if arch.has_attention():
        sizes["attention.n_heads"] = a.n_heads
    unknown = [name for name, value in sizes.items() if value is None]
    require(not unknown, f"{', '.join(unknown)} unknown, and a config states every size")
    fraction = arch.position.rotary_fraction
    if arch.position.type is PositionType.ROPE and "position.rotary_fraction" not in free:
        built = spec.rotary_fraction_default or 1.0
        why = f"position.rotary_fraction must be {built:g}: the share its code rotates"
        require(fraction in (None, built), why)
    if "attention.n_kv_heads" not in free and a.n_kv_heads is not None:
        require(a.n_kv_heads == a.n_heads, "attention.n_kv_heads must equal n_heads (no key)")
    if "layer_widths" not in free:
        require(arch.layer_widths is None, "one width for every layer (layer_widths null)")
    if "embedding_dim" not in free:
        require(arch.embedding_dim in (None, arch.d_model), "embeddings as wide as d_model")
    if "attention.head_dim" not in free and a.n_heads:
        require(arch.head_dim_effective * a.n_heads == arch.d_model,
                "attention.head_dim d_model / n_heads (no key for another)")  # fmt: skip
    if "attention.v_head_dim" not in free:
        require(a.v_head_dim in (None, arch.head_dim_effective), "values as wide as the keys")
    if "attention.mlp" not in free:
        require(a.mlp is not False, "every attention layer has its MLP")
    ratio = spec.d_ff_default_ratio
    if ratio and "mlp.d_ff" not in free:  # no key: the code fixes the width (BLOOM, MPT)
        require(arch.mlp.d_ff == ratio * arch.d_model, f"mlp.d_ff {ratio} x d_model (no key)")
    if a.qk_norm is not None and a.qk_norm.learned and "attention.qk_norm_type" not in free:
        n = arch.norm
        require(a.qk_norm_type in (None, n.type) and a.qk_norm_affine in (None, n.affine),
                f"a QK norm of the blocks' kind ({n.type.value}, {n.affine.value})")  # fmt: skip


def _shown(value: Any) -> str:
    return str(getattr(value, "value", value))


def _check_bias(spec: FamilySpec, arch: Architecture, free: set[str]) -> None:
    b = arch.bias
    got = (b.qkv, b.attn_out, b.mlp, bool(b.lm_head))
    want = [*(spec.fixed_bias or (None, None, spec.mlp_bias)), spec.lm_head_bias]
    if spec.fixed_bias is None and "bias.attn_out" not in free:
        require(b.qkv == b.attn_out, "attention_bias covers q, k, v and o alike")
    for index, part in enumerate(("qkv", "attn_out", "mlp", "lm_head")):
        if f"bias.{part}" in free or want[index] is None:
            want[index] = got[index]
    require(
        got == tuple(want),
        f"bias (qkv, attn_out, mlp, lm_head) must be {tuple(want)}, got {got}",
    )
