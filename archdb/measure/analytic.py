"""Exact parameter counts, FLOPs per token and KV-cache bytes from a card: pure Python.

No torch here: query commands call ``derived_figures`` for every card and must stay fast.
The formulas follow the builder's layout (``archdb.builder.layout``) term by term, so the
parameter count equals the meta-device model's and, on a toy, the FLOP count equals what
fvcore measures with archdb's handles (tests check both). Conventions are in
``archdb.measure.conventions`` and travel with every result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from archdb.builder.layout import (
    NORM_SLOTS,
    BuildError,
    HeadDims,
    LayerSpec,
    NormSpec,
    check_buildable,
    embedding_width,
    fill_unknowns,
    head_dims,
    layer_groups,
    learned_rows,
    norm_spec,
    parallel_shared_norm,
    qk_norm_spec,
    relative_buckets,
    score_bias_layer,
)
from archdb.schema import (
    Activation,
    Architecture,
    AttentionVariant,
    Card,
    Kind,
    LayerKind,
    NormPosition,
    NormType,
    PositionType,
    QKNorm,
)

from . import conventions as cv
from .conventions import FlopClass as C

# --- results --------------------------------------------------------------------------


@dataclass(frozen=True)
class ParamCount:
    """Exact parameter counts under stated conventions."""

    total: int  # every parameter once; tied embeddings counted once
    non_embedding: int  # without vocabulary and position tables
    active: int  # per token: routed experts only for the top-k
    embedding: int  # total - non_embedding
    convention: str = cv.PARAMS_CONVENTION


@dataclass(frozen=True)
class FlopCount:
    """Forward FLOPs of one sequence, by operator class, dense and causal."""

    seq_len: int
    dense: dict[str, int]  # per sequence, as the toy's kernels compute them
    causal: dict[str, int]  # per sequence, unmasked attention scores only
    convention: str = field(default=cv.FLOP_CONVENTION)
    attention_convention: str = field(default=cv.ATTENTION_CONVENTION)

    @property
    def per_token(self) -> float:
        return sum(self.dense.values()) / self.seq_len

    @property
    def per_token_causal(self) -> float:
        return sum(self.causal.values()) / self.seq_len

    def per_token_by_class(self, causal: bool = False) -> dict[str, float]:
        counts = self.causal if causal else self.dense
        return {k: v / self.seq_len for k, v in counts.items()}


# --- parameters ---------------------------------------------------------------------------


def param_count(arch: Architecture) -> ParamCount:
    """Exact parameters of the model the builder makes from this architecture."""
    return _param_count(_buildable(arch))


def _param_count(arch: Architecture) -> ParamCount:
    d, v, width = arch.d_model, arch.vocab_size, embedding_width(arch)
    ns, dims = norm_spec(arch), head_dims(arch)
    token_table = v * width
    head = 0 if arch.tied_embeddings else v * width
    head_bias = v if arch.bias.lm_head else 0
    positions = learned_rows(arch) * d if arch.position.type is PositionType.LEARNED else 0
    factorized = 2 * width * d if width != d else 0
    encoder_decoder = arch.kind is Kind.ENCODER_DECODER

    stacks = [(layer_groups(arch), encoder_decoder)]
    if encoder_decoder:
        stacks.append((layer_groups(arch, encoder=True), False))
    body = relative_tables = inactive = 0
    for groups, cross in stacks:
        for spec, n in groups:
            body += n * _layer_params(arch, spec, ns, dims, cross)
            inactive += n * _inactive_expert_params(arch, spec)
        body += _norm_params(ns, d) if arch.norm.final else 0
        if arch.position.type is PositionType.RELATIVE_BIAS:
            relative_tables += relative_buckets(arch) * dims.n_heads
    embedding = token_table + head + head_bias + positions + relative_tables
    total = embedding + factorized + body
    return ParamCount(
        total=total, non_embedding=total - embedding, active=total - inactive, embedding=embedding
    )


def _buildable(arch: Architecture) -> Architecture:
    arch, _ = fill_unknowns(arch)
    check_buildable(arch)
    return arch


def _linear(d_in: int, d_out: int, bias: bool) -> int:
    return d_in * d_out + (d_out if bias else 0)


def _norm_params(ns: NormSpec, width: int) -> int:
    return width * (int(ns.scale) + int(ns.bias))


def _layer_params(
    arch: Architecture, spec: LayerSpec, ns: NormSpec, dims: HeadDims, cross: bool
) -> int:
    n = _attention_params(arch, ns, dims) + _mlp_layer_params(arch, spec)
    n += _norm_params(ns, arch.d_model) * _norms_per_block(arch, cross)
    if cross:
        n += _attention_params(arch, ns, dims)
    if arch.position.type is PositionType.RELATIVE_XL and score_bias_layer(spec, arch):
        inner = dims.n_heads * dims.qk_dim
        n += arch.d_model * inner + 2 * inner  # W_R, u, v
    return n


def _norms_per_block(arch: Architecture, cross: bool) -> int:
    slots = NORM_SLOTS[arch.norm.position]
    if arch.parallel_layers:
        shared = parallel_shared_norm(arch) or not slots.before
        before = (1 if shared else 2) if slots.before else 0
        return before + 2 * slots.branch + slots.after
    per_sublayer = slots.before + slots.branch + slots.after
    return per_sublayer * (3 if cross else 2)


def _attention_params(arch: Architecture, ns: NormSpec, dims: HeadDims) -> int:
    d, b = arch.d_model, arch.bias
    h, kv = dims.n_heads, dims.n_kv_heads
    if arch.attention.variant is AttentionVariant.LATENT:
        lat = arch.attention.latent
        qk = dims.qk_dim
        if lat.q_lora_rank is None:
            q = _linear(d, h * qk, b.qkv)
        else:
            ql = lat.q_lora_rank
            q = _linear(d, ql, b.qkv) + _norm_params(ns, ql) + _linear(ql, h * qk, False)
        kvr = lat.kv_lora_rank
        kv_path = (
            _linear(d, kvr + lat.qk_rope_head_dim, b.qkv)
            + _norm_params(ns, kvr)
            + _linear(kvr, h * (lat.qk_nope_head_dim + dims.v_dim), False)
        )
        return q + kv_path + _linear(h * dims.v_dim, d, b.attn_out)
    hd = dims.qk_dim
    proj = (
        _linear(d, h * hd, b.qkv) + 2 * _linear(d, kv * hd, b.qkv) + _linear(h * hd, d, b.attn_out)
    )
    return proj + _qk_norm_params(arch.attention.qk_norm, qk_norm_spec(arch), h, kv, hd)


def _qk_norm_params(kind: QKNorm, ns: NormSpec, h: int, kv: int, hd: int) -> int:
    if kind is QKNorm.PER_HEAD:
        return 2 * _norm_params(ns, hd)
    if kind in (QKNorm.PER_HEAD_UNTIED, QKNorm.FULL):  # one weight per (head, dim)
        return _norm_params(ns, (h + kv) * hd)
    return 0  # none, l2


def _mlp_params(activation: Activation, d: int, f: int, bias: bool) -> int:
    branches = 2 if activation.gated else 1
    return branches * _linear(d, f, bias) + _linear(f, d, bias)


def _mlp_layer_params(arch: Architecture, spec: LayerSpec) -> int:
    act, d, bias = arch.mlp.activation, arch.d_model, arch.bias.mlp
    if not spec.moe:
        return _mlp_params(act, d, spec.d_ff, bias)
    moe = arch.mlp.moe
    n = d * moe.n_experts + moe.n_experts * _mlp_params(act, d, spec.d_ff, bias)
    if moe.n_shared:
        n += _mlp_params(act, d, moe.shared_d_ff, bias)
    return n


def _inactive_expert_params(arch: Architecture, spec: LayerSpec) -> int:
    if not spec.moe:
        return 0
    moe = arch.mlp.moe
    expert = _mlp_params(arch.mlp.activation, arch.d_model, spec.d_ff, arch.bias.mlp)
    return (moe.n_experts - moe.n_active) * expert


# --- FLOPs ----------------------------------------------------------------------------------


def flops(arch: Architecture, seq_len: int) -> FlopCount:
    """Forward FLOPs of one sequence of ``seq_len`` tokens (and as many source tokens)."""
    if seq_len < 1:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    return _FlopCounter(_buildable(arch), seq_len).count()


def flops_per_token(arch: Architecture, seq_len: int) -> float:
    return flops(arch, seq_len).per_token


def dense_keys(kind: LayerKind, window: int | None, t: int) -> int:
    """Keys scored by all t queries of a causal layer, masked ones included (as computed)."""
    if kind is LayerKind.LOCAL and window < t:
        return t * window
    if kind is LayerKind.CHUNKED and window < t:
        full, rest = divmod(t, window)
        return full * window * window + rest * rest
    return t * t


def causal_keys(kind: LayerKind, window: int | None, t: int) -> int:
    """Keys a causal layer's t queries may attend to (the useful, unmasked scores)."""
    if kind is LayerKind.LOCAL and window < t:
        return window * (window + 1) // 2 + (t - window) * window
    if kind is LayerKind.CHUNKED and window < t:
        full, rest = divmod(t, window)
        return full * window * (window + 1) // 2 + rest * (rest + 1) // 2
    return t * (t + 1) // 2


_ACT_COST = {Activation.SQUARED_RELU: 2}  # relu, then square; others one function


class _FlopCounter:
    """Walks the model as the builder lays it out, adding each operation's FLOPs."""

    def __init__(self, arch: Architecture, t: int) -> None:
        self.a, self.t = arch, t
        self.d = arch.d_model
        self.ns, self.dims = norm_spec(arch), head_dims(arch)
        self.dense: Counter[str] = Counter()
        self.causal: Counter[str] = Counter()
        self.repeat = 1  # identical layers are counted once and multiplied

    def add(self, cls: C, n: int, causal: int | None = None) -> None:
        self.dense[cls] += n * self.repeat
        self.causal[cls] += (n if causal is None else causal) * self.repeat

    def count(self) -> FlopCount:
        a, t = self.a, self.t
        self.embed(t)
        if a.kind is Kind.ENCODER_DECODER:
            self.embed(t)  # the source
            self.stack(layer_groups(a, encoder=True), causal=False, cross=False)
        self.stack(layer_groups(a), causal=True, cross=a.kind is Kind.ENCODER_DECODER)
        self.head()
        keys = [c.value for c in C]
        return FlopCount(
            seq_len=t,
            dense={k: self.dense[k] for k in keys},
            causal={k: self.causal[k] for k in keys},
        )

    # --- pieces ---

    def linear(self, d_in: int, d_out: int, bias: bool, tokens: int | None = None) -> None:
        n = self.t if tokens is None else tokens
        self.add(C.LINEAR, n * (cv.FLOPS_PER_MAC * d_in * d_out + (d_out if bias else 0)))

    def norm(self, width: int, tokens: int | None = None, spec: NormSpec | None = None) -> None:
        s = spec or self.ns
        base = cv.LAYERNORM if s.type is NormType.LAYERNORM else cv.RMSNORM
        per = base + cv.AFFINE * (int(s.scale) + int(s.bias))
        self.add(C.NORM, (self.t if tokens is None else tokens) * width * per)

    def elementwise(self, n: int, cls: C = C.ELEMENTWISE) -> None:
        self.add(cls, self.t * n)

    def embed(self, t: int) -> None:
        width = embedding_width(self.a)
        if width != self.d:
            self.linear(width, self.d, False)
        if self.a.position.type in (PositionType.SINUSOIDAL, PositionType.LEARNED):
            self.elementwise(self.d, C.EMBEDDING)

    def head(self) -> None:
        width, v = embedding_width(self.a), self.a.vocab_size
        if width != self.d:
            self.linear(self.d, width, False)
        self.linear(width, v, bool(self.a.bias.lm_head))
        if self.a.final_logit_softcap is not None:
            self.elementwise(cv.SOFTCAP * v)

    def stack(self, groups: list[tuple[LayerSpec, int]], causal: bool, cross: bool) -> None:
        for spec, n in groups:
            self.repeat = n
            self.block(spec, causal, cross)
        self.repeat = 1
        if self.a.norm.final:
            self.norm(self.d)
        if self.a.norm.position is NormPosition.RESIDUAL:
            self.elementwise(self.d)  # x + LN(dual)

    def block(self, spec: LayerSpec, causal: bool, cross: bool) -> None:
        slots = NORM_SLOTS[self.a.norm.position]
        if self.a.parallel_layers:
            shared = parallel_shared_norm(self.a) or not slots.before
            n_norms = ((1 if shared else 2) if slots.before else 0) + 2 * slots.branch + slots.after
            for _ in range(n_norms):
                self.norm(self.d)
            self.elementwise(2 * self.d)  # x + attn + mlp
            self.attention(spec, causal)
            self.mlp(spec)
            return
        sublayers = [lambda: self.attention(spec, causal)]
        if cross:
            sublayers.append(lambda: self.attention(None, False))
        sublayers.append(lambda: self.mlp(spec))
        resi_dual = self.a.norm.position is NormPosition.RESIDUAL
        for run in sublayers:
            for _ in range(slots.before + slots.branch + slots.after):
                self.norm(self.d)
            self.elementwise(self.d * (2 if resi_dual else 1))  # residual add (+ dual add)
            run()

    # --- attention ---

    def attention(self, spec: LayerSpec | None, causal: bool) -> None:
        """Self-attention of a layer, or cross-attention when spec is None."""
        a, dims, b = self.a, self.dims, self.a.bias
        h, kv, qk, vd = dims.n_heads, dims.n_kv_heads, dims.qk_dim, dims.v_dim
        rope = spec is not None and spec.rope_theta is not None and dims.rotary_dims > 0
        if a.attention.variant is AttentionVariant.LATENT:
            lat = a.attention.latent
            if lat.q_lora_rank is None:
                self.linear(self.d, h * qk, b.qkv)
            else:
                self.linear(self.d, lat.q_lora_rank, b.qkv)
                self.norm(lat.q_lora_rank)
                self.linear(lat.q_lora_rank, h * qk, False)
            self.linear(self.d, lat.kv_lora_rank + lat.qk_rope_head_dim, b.qkv)
            self.norm(lat.kv_lora_rank)
            self.linear(lat.kv_lora_rank, h * (lat.qk_nope_head_dim + vd), False)
            if rope:
                self.elementwise(cv.ROPE * dims.rotary_dims * (h + 1))  # shared RoPE key
        else:
            self.linear(self.d, h * qk, b.qkv)
            self.linear(self.d, kv * qk, b.qkv)
            self.linear(self.d, kv * qk, b.qkv)
            self.qk_norm(h, kv, qk)
            if rope:
                self.elementwise(cv.ROPE * dims.rotary_dims * (h + kv))
        if a.attention.variant is AttentionVariant.LINEAR:
            self.linear_kernel(h, qk, vd)
        else:
            self.softmax_kernel(spec, causal, h, qk, vd)
        self.linear(h * vd, self.d, b.attn_out)

    def qk_norm(self, h: int, kv: int, hd: int) -> None:
        kind = self.a.attention.qk_norm
        if kind is QKNorm.NONE:
            return
        if kind is QKNorm.L2:
            bare = NormSpec(NormType.RMSNORM, scale=False, bias=False)
            self.norm(hd, self.t * (h + kv), bare)
        else:  # per-head, per-head-untied and full cost the same per element
            self.norm(hd, self.t * (h + kv), qk_norm_spec(self.a))

    def softmax_kernel(self, spec: LayerSpec | None, causal: bool, h: int, qk: int, vd: int):
        t = self.t
        if spec is None or not causal:  # cross-attention or an encoder: all keys, unmasked
            dense = useful = t * t
        else:
            dense = dense_keys(spec.kind, spec.window, t)
            useful = causal_keys(spec.kind, spec.window, t)
        self.add(C.ATTENTION, t * h * qk)  # q * 1/sqrt(d)
        per_score = cv.FLOPS_PER_MAC * (qk + vd)  # QK^T and AV
        if spec is not None and score_bias_layer(spec, self.a):
            per_score += cv.ELEMENTWISE  # + bias
            if self.a.position.type is PositionType.RELATIVE_XL:
                per_score += self.relative_xl(h, qk)
        if self.a.attention.logit_softcap is not None:
            per_score += cv.SOFTCAP
        self.add(C.ATTENTION, h * dense * per_score, h * useful * per_score)
        self.add(C.SOFTMAX, h * dense * cv.SOFTMAX, h * useful * cv.SOFTMAX)

    def relative_xl(self, h: int, hd: int) -> int:
        """Transformer-XL's terms beyond q.k; returns their FLOPs per score."""
        self.linear(self.d, h * hd, False)  # W_R on one embedding per distance
        self.add(C.ATTENTION, self.t * h * hd)  # q + v
        self.add(C.ATTENTION, self.t * h * cv.FLOPS_PER_MAC * hd)  # u . k, once per key
        return cv.FLOPS_PER_MAC * hd + 2 * cv.ELEMENTWISE  # (q + v) . r, + u.k, * scale

    def linear_kernel(self, h: int, qk: int, vd: int) -> None:
        per_head = (
            2 * cv.LINEAR_FEATURE_MAP * qk  # phi(q), phi(k)
            + qk * vd  # outer product k v^T
            + cv.REDUCTION * qk * vd  # running sum of the state
            + cv.FLOPS_PER_MAC * qk * vd  # q . state
            + cv.REDUCTION * qk  # running sum of keys
            + qk
            + cv.REDUCTION * qk
            + 1  # q . z (+ eps)
            + vd  # divide
        )
        self.elementwise(h * per_head, C.ATTENTION)

    # --- MLP ---

    def mlp(self, spec: LayerSpec) -> None:
        a = self.a
        if not spec.moe:
            self.dense_mlp(spec.d_ff, self.t)
            return
        moe, d = a.mlp.moe, self.d
        self.linear(d, moe.n_experts, False)  # router
        self.add(C.SOFTMAX, self.t * cv.SOFTMAX * moe.n_active)
        self.dense_mlp(spec.d_ff, self.t * moe.n_active)  # k experts per token
        self.elementwise(2 * moe.n_active * d)  # weight each expert's output, sum them
        if moe.n_shared:
            self.dense_mlp(moe.shared_d_ff, self.t)
            self.elementwise(d)

    def dense_mlp(self, f: int, tokens: int) -> None:
        act, bias, d = self.a.mlp.activation, self.a.bias.mlp, self.d
        for _ in range(2 if act.gated else 1):
            self.linear(d, f, bias, tokens)
        per = _ACT_COST.get(act, 1) + (1 if act.gated else 0)  # activation (+ gating product)
        self.add(C.ELEMENTWISE, tokens * f * per)
        self.linear(f, d, bias, tokens)


# --- KV cache -------------------------------------------------------------------------------


def kv_cache_bytes_per_token(
    arch: Architecture, seq_len: int | None = None, dtype_bytes: int = cv.DEFAULT_KV_DTYPE_BYTES
) -> float:
    """Bytes of K/V cache per token, averaged over ``seq_len`` tokens (default: context)."""
    return _kv_cache(_buildable(arch), seq_len, dtype_bytes)


def _kv_cache(arch: Architecture, seq_len: int | None, dtype_bytes: int) -> float:
    t = seq_len or arch.context_length
    dims = head_dims(arch)
    if arch.attention.variant is AttentionVariant.LINEAR:
        return 0.0  # a fixed-size state, not a per-token cache
    if arch.attention.variant is AttentionVariant.LATENT:
        per_layer = arch.attention.latent.kv_lora_rank + arch.attention.latent.qk_rope_head_dim
    else:
        per_layer = 2 * dims.n_kv_heads * dims.qk_dim
    entries = 0
    for spec, n in layer_groups(arch):
        cached = min(t, spec.window) if spec.window is not None else t
        entries += n * per_layer * cached
        if arch.kind is Kind.ENCODER_DECODER:
            entries += n * per_layer * t  # cross-attention K/V of a source as long as the target
    return entries * dtype_bytes / t


# --- everything a query shows --------------------------------------------------------------


def default_seq_len(arch: Architecture) -> int:
    """The stated sequence length of full-size FLOPs: 2048, or the context if shorter."""
    return min(cv.DEFAULT_SEQ_LEN, arch.context_length or cv.DEFAULT_SEQ_LEN)


def derived_figures(card: Card) -> dict:
    """Derived figures of a card (None where the card lacks what a figure needs)."""
    arch = card.architecture
    out: dict = {
        "params_exact": None,
        "params_non_embedding": None,
        "params_active": None,
        "d_ff_ratio": arch.d_ff_ratio,
        "aspect_ratio": arch.aspect_ratio,
        "head_ratio": arch.head_ratio,
        "query_groups": arch.query_groups,
        "kv_cache_bytes_per_token": None,
        "flops_per_token": None,
        "norm_flops_share": None,
        "flops_seq_len": None,
        "kv_seq_len": None,
        "kv_dtype_bytes": cv.DEFAULT_KV_DTYPE_BYTES,
        "assumptions": [],
    }
    try:
        filled, assumed = fill_unknowns(arch)
        check_buildable(filled)
    except BuildError:
        return out
    params = _param_count(filled)
    seq = default_seq_len(filled)
    forward = _FlopCounter(filled, seq).count()
    out |= {
        "params_exact": params.total,
        "params_non_embedding": params.non_embedding,
        "params_active": params.active,
        "kv_cache_bytes_per_token": _kv_cache(filled, None, cv.DEFAULT_KV_DTYPE_BYTES),
        "kv_seq_len": filled.context_length,
        "flops_per_token": forward.per_token,
        "norm_flops_share": forward.dense.get(C.NORM, 0) / sum(forward.dense.values()),
        "flops_seq_len": seq,
        "assumptions": [str(x) for x in assumed],
    }
    return out


def training_flops(card: Card) -> float | None:
    """Training compute ~ 6 * N * D: N active parameters, D the card's training tokens."""
    if card.training.tokens is None:
        return None
    try:
        return 6 * param_count(card.architecture).active * card.training.tokens
    except BuildError:
        return None
