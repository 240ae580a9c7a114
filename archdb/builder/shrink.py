"""The toy scaling rule: one pure function from a full architecture to a toy one.

The toy keeps every categorical choice of the card (norm type, position and affine terms,
activation, position scheme, attention variant, QK norm, soft-caps, biases, parallel
blocks, tied embeddings, the layer pattern, MoE routing) and these ratios exactly:

- d_ff/d_model (and the dense, shared-expert, embedding, MLA-rank and low-rank query widths
  over d_model),
- query groups n_heads/n_kv_heads (MHA stays MHA, MQA stays MQA),
- n_heads*head_dim/d_model, and the rotary fraction of a head,
- the layer pattern's period (of a pattern that lists every layer, the first layers:
  see below), the MoE layer period, shared experts, and the routed experts and top-k up
  to a cap.

It shrinks: every width by one common factor, chosen as the smallest d_model >= 64 for
which all the ratios above come out as integers (with head_dim >= 8 and even, and
d_model a multiple of n_heads where the card's is); heads to
4 (MHA) or 2 KV heads times the query groups; depth to one period of the layer pattern
(and of the MoE layers, plus one dense layer if the card has leading dense layers and one
if it has trailing ones, Step-3's last layer), at least 2; vocabulary to 256; context to
64 tokens (or a stated ``seq_len``); local windows and chunks to a quarter of the toy
context, 16 of 64 tokens (when the card's window is shorter than its context; else to the
whole toy context); MLA head dims by a common factor to an 8-dim RoPE key; DSA's top_k to
the toy window and its indexer to at most 4 heads; an attention temperature's length
(Grok-2) as a window; a block-sparse layout's blocks to the toy window over its
local blocks (at least one token), so the local band is the toy window, its local blocks
and vertical stride kept.
Shared blocks (Zamba2) keep every weight set and run one invocation more than there are
sets (so a set is reused), before layers 1, 3, 5, ...; their adapter rank keeps its ratio
to d_model (at least 2).
Routed experts shrink to at most 16 per MoE layer (a 128-expert card across 23 MoE layers
outgrew a test worker's memory): the card's expert groups are kept, each with 16 // groups
experts (at least 2 where groups are ranked by their two best, so more than 16 only when
the groups need it), and top-k to at most what the top groups offer, and below the
experts, so routing still chooses. Zero-computation experts (LongCat-Flash) keep their
ratio to the routed experts (at least one); the shortcut layers' dense width scales with
d_model like the other MLP widths.
Recurrent mixers (``mixers``) keep their kernel widths; each mixer plugin (``archdb.mixers``:
Mamba-2, Gated DeltaNet, the short conv, Mamba-1, KDA, the RG-LRU, lightning attention)
shrinks by its own rule, stated in its module.
A pattern that lists every layer (as long as the stack: Nemotron-H, Nemotron 3, Bamba,
Kimi Linear, LFM2) has no period shorter than the stack, so its toy takes the card's own
first layers: the fewest that hold a layer of every kind the card has (each entry kind
with each MLP it carries, dense or MoE, the leading dense layers cut to one as above), at
least 2, with the pattern's entries for them. Kimi Linear's 27 layers, three KDA and one
MLA with a short last period, give its first 4 (KDA with the dense MLP; KDA, KDA and MLA
with the MoE): its repeating unit, and every kind it has; Nemotron-H 8B's 52 give 8
(M-M-M-M*). A prefix, not the shortest stretch from the middle (M*- is 3 layers), so
each toy layer sits at its index in the card and the leading dense layer stays first.
Attention-free cards have no head constraint. Cross-layer KV sharing keeps two periods of
the pattern, the second reusing the first's keys and values (at most the card's shared
layers); per-layer embeddings keep their width's ratio to d_model, and their table the toy
vocabulary (its share of it where the card's table is shorter); LAuReL's rank keeps its
ratio to d_model, activation sparsity its share of the layers (at least one), AltUp its
streams. A per-layer list with KV sharing keeps every layer (its shared layers are the
stack's last ones, which no shorter prefix holds).
Layer-wise scaling (``layer_widths``, OpenELM) keeps layers of different widths: the toy
takes the widths of card layers spread evenly from the first to the last, each layer's KV
heads in their ratio to the card's widest (at least one) with its own query groups, and
each dense width in its ratio to d_model (the width factor divides them all).
LongRoPE's per-frequency factors follow the toy's rotated pairs: the card's factors at
evenly spaced frequencies, its first (highest) and last (lowest) kept; the original context
stays, so the toy's sequences use the short set, as the card's up to that length.
Where no width factor keeps a ratio exactly, the toy rounds it and says so in
``approximated``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

from pydantic import ValidationError

from archdb.errors import validation_message
from archdb.fields import get_path, schema_fields
from archdb.mixers import MIXERS, ToyFrame
from archdb.plan.layout import BuildError, is_moe_layer, lcm, null_fields, rotary_dims
from archdb.schema import Architecture, AttentionVariant, GroupScore, Kind, MoE

TOY_CONTEXT = 64  # tokens, unless a seq_len is stated
TOY_WINDOW = 16  # a quarter of the toy context


@dataclass(frozen=True)
class ToyRule:
    """The rule's constants (see the module docstring)."""

    d_model_min: int = 64
    d_model_max: int = 1024
    head_dim_min: int = 8
    mha_heads: int = 4
    kv_heads_max: int = 2
    vocab: int = 256
    context: int = TOY_CONTEXT
    window: int = TOY_WINDOW
    min_layers: int = 2
    mla_rope_dim: int = 8
    experts_max: int = 16

    def describe(self) -> str:
        return (
            f"toy rule: widths scaled by one factor to the smallest d_model >= "
            f"{self.d_model_min} that keeps d_ff/d_model, n_heads*head_dim/d_model and the "
            f"other width ratios exact (head_dim >= {self.head_dim_min}, even); "
            f"{self.mha_heads} heads for MHA, else min(kv_heads, {self.kv_heads_max}) KV heads "
            f"x the query groups; depth = one period of the layer pattern and MoE layers "
            f"(plus at most one leading and one trailing dense layer), "
            f"or for a per-layer pattern the fewest first layers holding every kind of "
            f"layer (>= {self.min_layers}); vocab {self.vocab}; context {self.context}; windows "
            f"{self.window}{self._window_rule()}; routed experts <= {self.experts_max} (groups "
            f"kept); every categorical choice kept"
        )

    def _window_rule(self) -> str:
        if self.context == TOY_CONTEXT:
            return ""
        return f" (the default {TOY_WINDOW} of {TOY_CONTEXT}, scaled to this context)"

    def at(self, seq_len: int | None) -> ToyRule:
        """The rule for a toy of ``seq_len`` tokens: windows keep their share of the context."""
        if seq_len is None or seq_len == self.context:
            return self
        if seq_len < 1:
            raise BuildError(f"seq_len must be a positive number of tokens, got {seq_len}")
        window = max(1, seq_len * self.window // self.context)
        return replace(self, context=seq_len, window=window)


TOY_RULE = ToyRule()


@dataclass(frozen=True)
class Toy:
    """A toy architecture and what the rule kept, changed and approximated."""

    arch: Architecture
    rule: str
    kept: tuple[str, ...]
    approximated: tuple[str, ...]
    dims: dict = field(hash=False)


def shrink(arch: Architecture, rule: ToyRule = TOY_RULE, seq_len: int | None = None) -> Toy:
    """The toy of an architecture (pure: the input is not changed), with a context of
    ``seq_len`` tokens if given (windows and chunks scaled with it, see ``ToyRule.at``)."""
    rule = rule.at(seq_len)
    _require_sizes(arch)
    attention = arch.has_attention()
    heads = _toy_heads(arch, rule) if attention else _Heads(0, 0, 1)
    n_layers, n_enc, first_dense, last_dense = _toy_depth(arch, rule)
    widths = _toy_widths(arch, heads, rule) if attention else _attention_free_widths(arch, rule)
    data = arch.model_dump()
    data.update(
        d_model=widths.d_model,
        n_layers=n_layers,
        vocab_size=rule.vocab,
        tokenizer_vocab_size=None,
        context_length=rule.context,
        embedding_dim=widths.scaled.get("embedding_dim"),
    )
    if arch.kind is Kind.ENCODER_DECODER:
        data["n_encoder_layers"] = n_enc
    att = data["attention"]
    if attention:
        att.update(n_heads=heads.n_heads, n_kv_heads=heads.n_kv_heads, head_dim=widths.head_dim)
        if arch.attention.v_head_dim is not None:
            att["v_head_dim"] = _toy_value_width(arch, widths.head_dim)
    else:  # head sizes that size nothing (a config's defaults) would not fit the toy
        att.update(n_heads=None, n_kv_heads=None, head_dim=None, v_head_dim=None)
    if arch.attention.global_layers is not None:
        att["global_layers"] = _toy_global_layers(arch, heads, widths.head_dim)
    if arch.mixers is not None:
        frame = ToyFrame(
            arch.d_model,
            widths.d_model,
            rule,
            heads.n_heads if attention else None,
            widths.head_dim if attention else None,
        )
        data["mixers"] = _toy_mixers(arch, frame)
    # token lengths (a window, the temperatures' steps) shrink as the context does
    if (window := arch.attention.sliding_window) is not None:
        att["sliding_window"] = _toy_length(window, arch, rule)
    if (temper := arch.attention.temperature_length) is not None:
        att["temperature_length"] = _toy_length(temper, arch, rule)
    if (nope := arch.attention.nope_temperature) is not None:
        att["nope_temperature"]["floor_scale"] = _toy_length(nope.floor_scale, arch, rule)
    if (blocks := arch.attention.block_sparse) is not None:  # the local band: the toy window
        att["block_sparse"]["block_size"] = max(1, rule.window // blocks.local_blocks)
    if arch.attention.latent is not None:
        att["latent"] = widths.latent
    if arch.attention.query_rank is not None:
        att["query_rank"] = widths.scaled["query_rank"]
    if arch.attention.compressed is not None:  # DeepSeek-V4 (its indexer too)
        att["compressed"] = _toy_compressed(arch, widths, rule)
        if arch.attention.sparse is not None:
            att["sparse"] = _toy_entry_indexer(arch, att["compressed"]["rope_dim"], rule)
    elif arch.attention.sparse is not None:
        att["sparse"] = _toy_sparse(arch, widths.latent, rule)
    data["mlp"]["d_ff"] = widths.scaled.get("d_ff")
    if arch.mlp.kv_shared_d_ff is not None:
        data["mlp"]["kv_shared_d_ff"] = widths.scaled["kv_shared_d_ff"]
    if arch.attention.kv_shared_layers:
        att["kv_shared_layers"] = _toy_shared_layers(arch, n_layers)
    if arch.per_layer_embeddings is not None:
        data["per_layer_embeddings"] = _toy_per_layer_embeddings(arch, widths, rule)
    if arch.layer_widths is not None:
        data["layer_widths"] = _toy_layer_widths(arch, n_layers, heads, widths)
        toy_widths = data["layer_widths"]  # the card's fields: the widest toy layer's
        att["n_heads"] = max(toy_widths["n_heads_per_layer"])
        att["n_kv_heads"] = max(toy_widths["n_kv_heads_per_layer"])
        data["mlp"]["d_ff"] = max(toy_widths["d_ff_per_layer"])
    if arch.laurel_rank is not None:
        data["laurel_rank"] = widths.scaled["laurel_rank"]
    if (sparsity := arch.mlp.activation_sparsity) is not None:  # its share of the layers
        first = max(1, round(sparsity.first_layers * n_layers / arch.n_layers))
        data["mlp"]["activation_sparsity"]["first_layers"] = min(first, n_layers)
    moe = data["mlp"]["moe"]
    if moe is not None:
        moe["n_experts"], moe["n_active"] = _toy_experts(arch.mlp.moe, rule)
        moe["first_dense_layers"] = first_dense
        moe["last_dense_layers"] = last_dense if arch.mlp.moe.last_dense_layers else None
        moe["dense_d_ff"] = widths.scaled.get("dense_d_ff")
        moe["shared_d_ff"] = widths.scaled.get("shared_d_ff")
        moe["dense_beside_d_ff"] = widths.scaled.get("dense_beside_d_ff")
        moe["shortcut_dense_d_ff"] = widths.scaled.get("shortcut_dense_d_ff")
        moe["latent_dim"] = widths.scaled.get("moe_latent")
        moe["zero_experts"] = _toy_zero_experts(arch.mlp.moe, moe["n_experts"])
    if arch.shared_blocks is not None:
        data["n_layers"], data["shared_blocks"] = _toy_shared_blocks(arch, n_layers, widths.d_model)
    if _per_layer_list(arch) and data["n_layers"] < arch.n_layers:  # the first layers' entries
        att["layer_pattern"] = att["layer_pattern"][: data["n_layers"]]
    pos = data["position"]
    if attention and arch.position.rope_scaling is not None:
        pos["rope_scaling"] = _toy_longrope(arch, widths.head_dim)
    if pos.get("learned_rows") is not None:
        pos["learned_rows"] = rule.context + pos["learned_rows"] - (arch.context_length or 0)
    try:
        toy = Architecture.model_validate(data)
    except ValidationError as exc:  # a valid card whose toy the schema refuses
        error = exc.errors()[0]
        where = ".".join(map(str, error["loc"]))
        problem = validation_message(error)
        raise BuildError(
            f"the toy rule cannot shrink this card: {where + ': ' if where else ''}{problem}"
        ) from None
    kept = _kept(arch, toy, heads)
    return Toy(toy, rule.describe(), kept, tuple(widths.approximated), toy_dims(toy))


def _toy_longrope(arch: Architecture, head_dim: int) -> dict:
    """The card's RoPE scaling, LongRoPE's factor lists cut to the toy's rotated pairs."""
    scaling = arch.position.rope_scaling.model_dump()
    if scaling.get("short_factor") is None:
        return scaling
    fraction = arch.position.rotary_fraction
    pairs = int(head_dim * (fraction if fraction is not None else 1.0)) // 2
    for name in ("short_factor", "long_factor"):
        scaling[name] = [scaling[name][i] for i in toy_layer_indices(len(scaling[name]), pairs)]
    return scaling


TOY_SIZES = ("d_model", "n_layers", "mlp.d_ff", "attention.n_heads")  # what a toy scales


def _require_sizes(arch: Architecture) -> None:
    missing = [f"architecture.{p}" for p in null_fields(arch, TOY_SIZES)]
    if missing:
        raise BuildError(f"cannot build: unknown (null) sizes: {', '.join(missing)}")


# --- heads and depth ------------------------------------------------------------------


@dataclass(frozen=True)
class _Heads:
    n_heads: int
    n_kv_heads: int
    groups: int


def _toy_heads(arch: Architecture, rule: ToyRule) -> _Heads:
    att = arch.attention
    h = att.n_heads
    kv = h if att.variant is AttentionVariant.LATENT else att.n_kv_heads
    groups = h // kv
    if groups == 1:
        n = min(h, rule.mha_heads)
        return _Heads(n, n, 1)
    kv_t = 1 if kv == 1 else min(kv, rule.kv_heads_max)
    return _Heads(groups * kv_t, kv_t, groups)


def _toy_value_width(arch: Architecture, head_dim: int) -> int:
    """Value heads scaled with the query/key heads (their ratio kept to an even width)."""
    v, hd = arch.attention.v_head_dim, arch.head_dim_effective
    assert v is not None and hd
    width = max(2, v * head_dim // hd)
    return width - width % 2


def _toy_length(tokens: int, arch: Architecture, rule: ToyRule) -> int:
    """A length in tokens within the toy: the toy window where it is shorter than the
    context (the mechanism stays in play), else the toy context."""
    return rule.window if tokens < (arch.context_length or math.inf) else rule.context


def _toy_global_layers(arch: Architecture, heads: _Heads, head_dim: int) -> dict:
    """Global layers' own sizes in the toy: their head width in the same ratio to the
    other layers', their KV heads in the same ratio to the query heads (at least one)."""
    g = arch.attention.global_layers
    assert g is not None
    out = g.model_dump()
    hd = arch.head_dim_effective
    if g.head_dim is not None and hd:
        width = max(2, g.head_dim * head_dim // hd)
        out["head_dim"] = width - width % 2
    if g.n_kv_heads is not None:
        kv = heads.n_heads * g.n_kv_heads // arch.attention.n_heads
        out["n_kv_heads"] = kv if kv >= 1 and heads.n_heads % kv == 0 else 1
    return out


def _toy_experts(moe: MoE, rule: ToyRule) -> tuple[int, int]:
    """(routed experts, top-k) of the toy: at most ``experts_max``, in the card's groups."""
    if moe.n_experts <= rule.experts_max:
        return moe.n_experts, moe.n_active
    groups = moe.n_groups or 1
    least = 2 if moe.group_score is GroupScore.TOP2_SUM else 1  # a group's two best
    per_group = max(least, rule.experts_max // groups)
    experts = groups * per_group
    reachable = (moe.top_k_groups or groups) * per_group  # what the chosen groups hold
    return experts, max(1, min(moe.n_active, reachable, experts - 1))


def _toy_zero_experts(moe: MoE, toy_experts: int) -> int | None:
    """Zero-computation experts keep their share of the routed ones (at least one)."""
    if not moe.zero_experts:
        return moe.zero_experts
    return max(1, round(moe.zero_experts * toy_experts / moe.n_experts))


def _toy_depth(arch: Architecture, rule: ToyRule) -> tuple[int, int, int, int]:
    """(decoder layers, encoder layers, leading dense layers, trailing dense layers) of
    the toy: at most one of each kind of dense layers, and a whole period between them."""
    moe = arch.mlp.moe
    period = len(arch.attention.layer_pattern)
    first_dense = min(moe.first_dense_layers, 1) if moe else 0
    last_dense = min(moe.last_dense_layers or 0, 1) if moe else 0
    moe_period = moe.layer_period if moe else 1
    if _per_layer_list(arch):
        n = min(arch.n_layers, max(rule.min_layers, _prefix_of_every_kind(arch, first_dense)))
    else:
        whole = first_dense + lcm(period, moe_period) + last_dense
        n = min(arch.n_layers, max(rule.min_layers, whole))
    if arch.attention.kv_shared_layers:  # a period that keeps its KV, then one that reuses
        n = min(arch.n_layers, 2 * lcm(period, moe_period))
    n_enc = 0
    if arch.n_encoder_layers:
        n_enc = max(1, round(arch.n_encoder_layers * n / arch.n_layers))
    return n, n_enc, first_dense, last_dense


def _per_layer_list(arch: Architecture) -> bool:
    """Whether the layer pattern lists every layer (Nemotron-H, Kimi Linear, LFM2): it is
    as long as the stack, so one period of it is the whole depth."""
    return len(arch.attention.layer_pattern) >= (arch.n_layers or 0)


def _prefix_of_every_kind(arch: Architecture, first_dense: int) -> int:
    """The fewest first layers of a per-layer list that hold a layer of every kind the
    stack has: every entry kind with each MLP it carries (dense or MoE), the leading dense
    layers cut to ``first_dense`` as in the toy."""
    moe = arch.mlp.moe
    laid = arch
    if moe is not None:  # the toy's MoE placement
        cut = moe.model_copy(update={"first_dense_layers": first_dense})
        laid = arch.model_copy(update={"mlp": arch.mlp.model_copy(update={"moe": cut})})
    pattern = arch.attention.layer_pattern
    kinds = [(pattern[i], is_moe_layer(laid, i)) for i in range(arch.n_layers)]
    every, seen = set(kinds), set()
    for i, kind in enumerate(kinds):
        seen.add(kind)
        if seen == every:
            return i + 1
    return len(kinds)


def _toy_shared_layers(arch: Architecture, n_toy: int) -> int:
    """KV sharing in the toy: at most one pattern period of layers reuse the KV of the
    period before them (every kind keeps a layer that computes its own)."""
    shared = arch.attention.kv_shared_layers or 0
    if n_toy == arch.n_layers:
        return shared
    return min(shared, n_toy // 2)


def toy_layer_indices(n_full: int, n_toy: int) -> list[int]:
    """The card's layers whose widths a layer-wise-scaled toy takes: spread evenly from
    the first layer to the last (the narrowest and, in OpenELM, the widest)."""
    if n_toy >= n_full:
        return list(range(n_full))
    if n_toy == 1:
        return [n_full - 1]
    return [round(j * (n_full - 1) / (n_toy - 1)) for j in range(n_toy)]


def _toy_layer_widths(arch: Architecture, n_toy: int, heads: _Heads, widths: _Widths) -> dict:
    """Layer-wise scaling in the toy: the chosen layers' KV heads in their ratio to the
    card's widest (at least one), each layer's query groups kept, and each dense width in
    its ratio to d_model (exact: the toy width factor divides them all)."""
    w = arch.layer_widths
    assert w is not None
    kv_max = max(w.n_kv_heads_per_layer)
    picked = toy_layer_indices(arch.n_layers, n_toy)
    kv = [max(1, w.n_kv_heads_per_layer[i] * heads.n_kv_heads // kv_max) for i in picked]
    groups = [w.n_heads_per_layer[i] // w.n_kv_heads_per_layer[i] for i in picked]
    return {
        "n_heads_per_layer": [k * g for k, g in zip(kv, groups, strict=True)],
        "n_kv_heads_per_layer": kv,
        "d_ff_per_layer": [widths.scaled[f"layer_d_ff.{i}"] for i in picked],
    }


def _toy_per_layer_embeddings(arch: Architecture, widths: _Widths, rule: ToyRule) -> dict:
    """Per-layer embeddings in the toy: the width in its ratio to d_model, the table the
    toy vocabulary (or its share of it where the card's table is shorter)."""
    ple = arch.per_layer_embeddings
    assert ple is not None
    rows = rule.vocab
    if arch.vocab_size and ple.vocab_size < arch.vocab_size:
        rows = max(1, rule.vocab * ple.vocab_size // arch.vocab_size)
    return {"width": widths.scaled["per_layer_width"], "vocab_size": rows}


# --- widths -----------------------------------------------------------------------------


@dataclass
class _Widths:
    d_model: int
    head_dim: int
    scaled: dict[str, int]
    latent: dict | None
    approximated: list[str]


def _width_fields(arch: Architecture) -> dict[str, int]:
    """Widths that scale with d_model (their ratio to d_model is kept)."""
    moe, lat = arch.mlp.moe, arch.attention.latent
    out = {"d_ff": arch.mlp.d_ff, "embedding_dim": arch.embedding_dim}
    out["kv_shared_d_ff"] = arch.mlp.kv_shared_d_ff
    if arch.per_layer_embeddings is not None:
        out["per_layer_width"] = arch.per_layer_embeddings.width
    out["laurel_rank"] = arch.laurel_rank
    if arch.layer_widths is not None:
        out |= {f"layer_d_ff.{i}": v for i, v in enumerate(arch.layer_widths.d_ff_per_layer)}
    if moe is not None:
        out |= {"dense_d_ff": moe.dense_d_ff, "shared_d_ff": moe.shared_d_ff}
        out |= {"dense_beside_d_ff": moe.dense_beside_d_ff}
        out |= {"shortcut_dense_d_ff": moe.shortcut_dense_d_ff, "moe_latent": moe.latent_dim}
    if lat is not None:
        out |= {"kv_lora_rank": lat.kv_lora_rank, "q_lora_rank": lat.q_lora_rank}
    out["query_rank"] = arch.attention.query_rank
    return {k: v for k, v in out.items() if v is not None}


def _toy_widths(arch: Architecture, heads: _Heads, rule: ToyRule) -> _Widths:
    d = arch.d_model
    fields = _width_fields(arch)
    base = d // math.gcd(d, *fields.values())  # smallest d_model keeping every width ratio
    latent = arch.attention.latent is not None
    hd = arch.head_dim_effective
    inner = None if latent else arch.attention.n_heads * hd
    rot_ratio = Fraction(rotary_dims(arch, hd), hd) if not latent else None
    start = math.ceil(min(rule.d_model_min, d) / base) * base
    # First keep everything; failing that, everything but an exact rotary fraction (a
    # full model may round its rotating dims: int(128 * 0.4) = 51 -> 50).
    for rotary, moved in ((rot_ratio, []), (None, ["rotary fraction rounded to even dims"])):
        for d_t in range(start, min(rule.d_model_max, d) + 1, base):
            if d_t % heads.n_heads and d % arch.attention.n_heads == 0:
                continue  # keep d_model divisible by the heads where the card's is
            head_dim = _head_dim(arch, heads, inner, hd, rotary, Fraction(d_t, d), rule)
            if head_dim is not None:
                scaled = {k: v * d_t // d for k, v in fields.items()}
                return _Widths(d_t, head_dim, scaled, _toy_latent(arch, scaled, rule), moved)
        if rot_ratio is None or rot_ratio == 1:
            break
    return _approximate(arch, heads, fields, inner, rule)


def _attention_free_widths(arch: Architecture, rule: ToyRule) -> _Widths:
    """No heads to keep: the smallest d_model >= the minimum keeping the width ratios."""
    d = arch.d_model
    fields = _width_fields(arch)
    base = d // math.gcd(d, *fields.values())
    d_t = math.ceil(min(rule.d_model_min, d) / base) * base
    if d_t <= min(rule.d_model_max, d):
        return _Widths(d_t, 0, {k: v * d_t // d for k, v in fields.items()}, None, [])
    d_t = min(d, rule.d_model_min)
    scaled = {k: max(1, round(v * d_t / d)) for k, v in fields.items()}
    moved = [f"{k}/d_model {fields[k] / d:.4g} -> {v / d_t:.4g}" for k, v in scaled.items()]
    return _Widths(d_t, 0, scaled, None, moved)


def _toy_mixers(arch: Architecture, frame: ToyFrame) -> dict:
    """Recurrent mixer sizes of the toy (see the module docstring; a mixer plugin's by its
    own rule)."""
    assert arch.mixers is not None
    out = arch.mixers.model_dump()
    for plugin in MIXERS.values():
        if (sizes := plugin.sizes_of(arch)) is not None:
            out[plugin.field] |= plugin.toy(sizes, arch, frame)
    return out


def _toy_shared_blocks(arch: Architecture, n_layers: int, d_t: int) -> tuple[int, dict]:
    """(toy depth, toy shared_blocks): every weight set, and one invocation more when the
    card reuses a set, so the toy runs a block twice; invocations before layers 1, 3, 5,
    ... (each after a plain layer); the adapter rank in its ratio to d_model (at least 2,
    at most the card's)."""
    sb = arch.shared_blocks
    assert sb is not None
    k = min(len(sb.layers), sb.n_blocks + 1)
    out = sb.model_dump()
    out["layers"] = [2 * i + 1 for i in range(k)]
    if sb.adapter_rank is not None:
        rank = round(sb.adapter_rank * d_t / arch.d_model)
        out["adapter_rank"] = min(sb.adapter_rank, max(2, rank))
    return max(n_layers, 2 * k), out


def _head_dim(
    arch: Architecture,
    heads: _Heads,
    inner: int | None,
    hd: int,
    rot_ratio: Fraction | None,
    scale: Fraction,
    rule: ToyRule,
) -> int | None:
    """The toy head_dim if this width scale keeps the head ratio exactly, else None."""
    if inner is None:  # MLA: head dims scale on their own
        return _latent_factor_dims(arch, rule)[0]
    inner_t = inner * scale
    if inner_t.denominator != 1 or inner_t.numerator % heads.n_heads:
        return None
    head_dim = inner_t.numerator // heads.n_heads
    if head_dim < min(rule.head_dim_min, hd) or head_dim % 2:
        return None
    toy_rot = rotary_dims(arch, head_dim)
    if rot_ratio is not None and Fraction(toy_rot, head_dim) != rot_ratio:
        return None
    return head_dim


def _latent_factor_dims(arch: Architecture, rule: ToyRule) -> tuple[int, int, int, int]:
    """(head_dim, rope, nope, v) of a toy MLA: dims divided by one factor."""
    lat = arch.attention.latent
    rope, nope, v = lat.qk_rope_head_dim, lat.qk_nope_head_dim, lat.v_head_dim
    factor = max(1, rope // rule.mla_rope_dim)
    while factor > 1 and (rope % factor or nope % factor or v % factor):
        factor -= 1
    head_dim = (arch.attention.head_dim or v) // factor or 1
    return head_dim, rope // factor, nope // factor, v // factor


def _toy_latent(arch: Architecture, scaled: dict[str, int], rule: ToyRule) -> dict | None:
    if arch.attention.latent is None:
        return None
    _, rope, nope, v = _latent_factor_dims(arch, rule)
    return {
        "kv_lora_rank": max(1, scaled["kv_lora_rank"]),
        "q_lora_rank": max(1, scaled["q_lora_rank"]) if "q_lora_rank" in scaled else None,
        "qk_rope_head_dim": rope,
        "qk_nope_head_dim": nope,
        "v_head_dim": v,
        "lora_scaled": arch.attention.latent.lora_scaled,  # LongCat-Flash's, by the toy's ranks
    }


def _toy_sparse(arch: Architecture, latent: dict, rule: ToyRule) -> dict:
    """DSA's indexer: at most the MHA toy's heads, its head width in the same ratio to the
    rotary dims, and top_k the toy window, so that selection drops keys in the toy."""
    sparse, lat = arch.attention.sparse, arch.attention.latent
    rope = latent["qk_rope_head_dim"]
    head_dim = max(rope, sparse.indexer_head_dim * rope // lat.qk_rope_head_dim)
    return sparse.model_dump() | {
        "indexer_heads": min(sparse.indexer_heads, rule.mha_heads),
        "indexer_head_dim": head_dim + head_dim % 2,
        "top_k": min(sparse.top_k, rule.window),
    }


def _toy_compressed(arch: Architecture, widths: _Widths, rule: ToyRule) -> dict:
    """DeepSeek-V4's sizes in the toy: the query and output ranks in their ratio to d_model,
    the rotated dims in theirs to head_dim (even, at least 2), the groups kept; an entry
    ratio above a quarter of the toy window scaled with the window, so the toy's context
    holds entries of every kind."""
    comp, att = arch.attention.compressed, arch.attention
    d, d_t = arch.d_model, widths.d_model

    def width(value: int) -> int:
        return max(2, value * d_t // d)

    rope = max(2, comp.rope_dim * widths.head_dim // att.head_dim)

    def ratio(value: int) -> int:
        if value <= rule.window // 4:
            return value
        return max(2, value * rule.window // att.sliding_window)

    return comp.model_dump() | {
        "q_lora_rank": width(comp.q_lora_rank),
        "output_rank": width(comp.output_rank),
        "rope_dim": min(rope + rope % 2, widths.head_dim),
        "sparse_ratio": ratio(comp.sparse_ratio),
        "heavy_ratio": ratio(comp.heavy_ratio),
    }


def _toy_entry_indexer(arch: Architecture, rope_dim: int, rule: ToyRule) -> dict:
    """V4's indexer: at most the MHA toy's heads, its head width in its ratio to the
    rotated dims, top_k a quarter of the toy window (so the toy drops entries)."""
    sparse, comp = arch.attention.sparse, arch.attention.compressed
    head_dim = max(rope_dim, sparse.indexer_head_dim * rope_dim // comp.rope_dim)
    return sparse.model_dump() | {
        "indexer_heads": min(sparse.indexer_heads, rule.mha_heads),
        "indexer_head_dim": head_dim + head_dim % 2,
        "top_k": min(sparse.top_k, max(1, rule.window // 4)),
    }


def _approximate(
    arch: Architecture, heads: _Heads, fields: dict[str, int], inner: int | None, rule: ToyRule
) -> _Widths:
    """No common factor keeps every ratio: round each width and list what moved."""
    d = arch.d_model
    d_t = min(d, rule.d_model_min)
    if inner is not None:  # wide enough for the toy's heads at the card's head ratio, as
        # far as the rule's widest toy and the card allow (narrow heads: the ratio moves)
        wide = math.ceil(heads.n_heads * rule.head_dim_min * d / inner)
        d_t = max(d_t, min(wide, rule.d_model_max, d))
    approximated: list[str] = []
    scaled = {}
    for name, width in fields.items():
        scaled[name] = max(1, round(width * d_t / d))
        if scaled[name] * d != width * d_t:
            approximated.append(f"{name}/d_model {width / d:.4g} -> {scaled[name] / d_t:.4g}")
    if inner is None:
        head_dim = _latent_factor_dims(arch, rule)[0]
    else:
        head_dim = max(rule.head_dim_min, round(inner * d_t / d / heads.n_heads))
        head_dim += head_dim % 2
        if heads.n_heads * head_dim * d != inner * d_t:
            approximated.append(
                f"n_heads*head_dim/d_model {inner / d:.4g} -> {heads.n_heads * head_dim / d_t:.4g}"
            )
        hd = arch.head_dim_effective
        if Fraction(rotary_dims(arch, head_dim), head_dim) != Fraction(rotary_dims(arch, hd), hd):
            approximated.append("rotary fraction rounded to an even number of dims")
    return _Widths(d_t, head_dim, scaled, _toy_latent(arch, scaled, rule), approximated)


# --- reporting ------------------------------------------------------------------------


def _kept(full: Architecture, toy: Architecture, heads: _Heads) -> tuple[str, ...]:
    kept = [
        "every categorical choice (norm, activation, positions, attention variant, QK norm, "
        "soft-caps, biases, parallel blocks, tied embeddings)",
        *([f"d_ff/d_model = {_ratio(toy.mlp.d_ff, toy.d_model)}"] if toy.mlp.d_ff else []),
        *([f"query groups = {heads.groups}"] if toy.has_attention() else []),
        _pattern_kept(full, toy),
    ]
    if toy.head_ratio is not None and toy.attention.latent is None:
        inner = toy.attention.n_heads * toy.head_dim_effective
        kept.append(f"n_heads*head_dim/d_model = {_ratio(inner, toy.d_model)}")
    if full.position.rotary_fraction is not None:
        kept.append(f"rotary fraction = {full.position.rotary_fraction:g}")
    if toy.attention.global_layers is not None:
        sizes = toy.attention.global_layers.model_dump(exclude_none=True)
        kept.append(f"global layers' own sizes (toy): {sizes}")
    if toy.mixers is not None:
        kept.append(f"recurrent mixers (toy sizes): {toy.mixers.model_dump(exclude_none=True)}")
    if toy.attention.kv_shared_layers:
        kept.append(
            f"cross-layer KV sharing: the last {toy.attention.kv_shared_layers} of "
            f"{toy.n_layers} layers reuse an earlier layer's keys and values"
        )
    if (lw := toy.layer_widths) is not None:
        kept.append(
            f"layer-wise scaling (toy): query heads {lw.n_heads_per_layer}, KV heads "
            f"{lw.n_kv_heads_per_layer}, d_ff {lw.d_ff_per_layer}, from the card's layers "
            f"{toy_layer_indices(full.n_layers, toy.n_layers)}"
        )
    if toy.per_layer_embeddings is not None:
        ple = toy.per_layer_embeddings
        kept.append(f"per-layer embeddings: width {ple.width}, {ple.vocab_size} rows")
    if toy.altup is not None:
        kept.append(f"AltUp: {toy.altup.n_inputs} streams; LAuReL rank {toy.laurel_rank}")
    if (sparsity := toy.mlp.activation_sparsity) is not None:
        kept.append(
            f"activation sparsity {sparsity.target:g} on the first {sparsity.first_layers} "
            f"of {toy.n_layers} layers"
        )
    if (sb := toy.shared_blocks) is not None:
        kept.append(
            f"shared blocks: {sb.n_blocks} weight sets, invoked before layers {sb.layers} "
            f"(adapter rank {sb.adapter_rank})"
        )
    moe = toy.mlp.moe
    if moe is not None:
        full_moe = full.mlp.moe
        capped = (
            f" (of {full_moe.n_experts}, top-{full_moe.n_active}: capped)"
            if full_moe.n_experts != moe.n_experts
            else ""
        )
        kept.append(
            f"MoE: {moe.n_experts} experts, top-{moe.n_active}{capped}, {moe.n_shared} shared, "
            f"layer period {moe.layer_period}, first dense layers "
            f"{full.mlp.moe.first_dense_layers} -> {moe.first_dense_layers}"
            + _last_dense_kept(full_moe, moe)
        )
    return tuple(kept)


def _last_dense_kept(full: MoE, toy: MoE) -> str:
    """The trailing dense layers as the toy keeps them (nothing without them)."""
    if not full.last_dense_layers:
        return ""
    return f", last dense layers {full.last_dense_layers} -> {toy.last_dense_layers}"


def _pattern_kept(full: Architecture, toy: Architecture) -> str:
    entries = ", ".join(k.value for k in toy.attention.layer_pattern)
    if _per_layer_list(full) and toy.n_layers < full.n_layers:
        return (
            f"layer pattern (the first {toy.n_layers} of the card's {full.n_layers} layers, "
            f"a layer of every kind): {entries}"
        )
    return f"layer pattern (period {len(toy.attention.layer_pattern)}): {entries}"


def _ratio(num: int, den: int) -> str:
    r = Fraction(num, den)
    return f"{float(r):.6g}" if r.denominator == 1 or len(str(r)) > 9 else f"{r} = {float(r):.6g}"


# Groups whose sizes are named by their leaf alone (n_heads, d_ff, n_experts); a size in
# any other group keeps its group (latent.kv_lora_rank, mixers.mamba2.state_size).
_PLAIN_GROUPS = ("attention.", "mlp.moe.", "mlp.", "position.")


def toy_dims(arch: Architecture) -> dict:
    """The sizes of an architecture (every integer field the card sets, from the schema),
    as a flat dict reported next to toy figures; head_dim is the effective head width."""
    dims: dict[str, int] = {}
    for fact in schema_fields(Architecture):
        if fact.inner is not int or fact.is_list:
            continue
        value = get_path(arch, fact.path)
        if value is None:
            continue
        name = next(
            (fact.path.removeprefix(g) for g in _PLAIN_GROUPS if fact.path.startswith(g)),
            fact.path,
        )
        dims[name] = value
    if (head_dim := arch.head_dim_effective) is not None:
        dims["head_dim"] = head_dim
    return dims
