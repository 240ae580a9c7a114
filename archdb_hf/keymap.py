"""A family's config keys, each declared once (``Key``), and what is derived from them.

A ``Key`` names one key of a transformers config and the card field it holds. A family
lists its keys beside its fixed choices (``archdb_hf.families.spec.FamilySpec``), and both
directions follow from the list: import-hf reads every key into its field (``read_keys``),
and the reference writes every field back under its key (``write_config``). The fixed
choices the keys do not carry are checked once for every family (``check_fixed``), so a
card that differs from them is refused, never compared with a different model.

Hooks remain for what a key cannot say one way or the other: a value computed from
several fields, a list spelled per layer, a switch that picks among layouts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archdb.schema import (
    Architecture,
    AttentionVariant,
    LayerKind,
    PositionType,
)

if TYPE_CHECKING:
    from archdb_hf.draft import Draft
    from archdb_hf.families.spec import FamilySpec


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


# --- config -> card ----------------------------------------------------------------------


def read_keys(d: Draft, keys: Iterable[Key]) -> None:
    """Every key the draft's generic steps do not read, into its field; absent and
    without a default, the field is left to the steps and hooks."""
    for key in keys:
        if not key.read or key.path is None:
            continue
        if key.given is not None and d.value(f"architecture.{key.given}") is None:
            continue
        if key.kind is not None and key.kind not in (
            d.value("architecture.attention.layer_pattern") or ()
        ):
            continue
        value = d.read(key.name, *key.also, default=key.default, required=key.required)
        if value is None:
            continue
        d.set(f"architecture.{key.path}", key.into(value) if key.into else value,
              d.origin_of(key.name))  # fmt: skip


def read_fixed(d: Draft, fixed: Iterable[tuple[str, Any]], parts: bool = False) -> None:
    """The card values the family's code fixes: before the read hook those of the parts
    every model has; after it (``parts``) those of an optional part (an MoE, a mixer),
    where the config has the part."""
    for path, value in fixed:
        part = "architecture." + path.rsplit(".", 1)[0] + "."
        if path.startswith(("mlp.moe.", "mixers.")) != parts:
            continue
        if not parts or any(p.startswith(part) for p in d.values):
            d.set(f"architecture.{path}", value, "family")


MOE_LAYOUT = {"n_shared": 0, "first_dense_layers": 0, "layer_period": 1}


def fill_moe_layout(d: Draft) -> None:
    """An MoE the keys read: the layout its config does not state is the code's (no shared
    experts, experts from the first layer on every layer)."""
    if not any(p.startswith("architecture.mlp.moe.") for p in d.values):
        return
    if d.value("architecture.mlp.moe.n_experts") is None:
        return
    for name, value in MOE_LAYOUT.items():
        if d.value(f"architecture.mlp.moe.{name}") is None:
            d.set(f"architecture.mlp.moe.{name}", value, "family")


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


@dataclass(frozen=True, eq=False)
class Writer:
    """A family's card -> config writer: its fixed choices checked, its keys written, then
    its own hook (keys no ``Key`` can write, and checks of its own)."""

    spec: FamilySpec = field(repr=False)
    hook: Callable[[Architecture], dict]

    def __call__(self, arch: Architecture) -> dict:
        check_fixed(self.spec, arch)
        return write_keys(self.spec.keys, arch) | self.hook(arch)


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
