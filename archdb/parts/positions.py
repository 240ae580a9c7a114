"""Position schemes (one registry): where each acts and what it costs.

A scheme can add a table to the token embeddings (sinusoidal, learned), rotate query and
key dims (RoPE), put a bias on attention scores shared by a stack's layers (ALiBi, T5)
or computed in each layer (Transformer-XL). NoPE layers (``global-nope``) opt out of all.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from archdb import conventions as cv
from archdb.conventions import FlopClass as C
from archdb.schema import (
    T5_MAX_DISTANCE,
    PositionType,
    RopeScaling,
    RopeScalingType,
    SinusoidLayout,
)
from archdb.tally import Tally


def yarn_mscale(factor: float, weight: float = 1.0) -> float:
    """YaRN's temperature term 0.1 * weight * ln(factor) + 1 (Peng et al. 2023, Eq. 21);
    1 where nothing is stretched (factor <= 1)."""
    return 0.1 * weight * math.log(factor) + 1.0 if factor > 1 else 1.0


def yarn_rotary_factor(scaling: RopeScaling) -> float:
    """The factor on YaRN's cos/sin tables: mscale / mscale_all_dim's terms where the card
    records DeepSeek's pair (the whole softmax takes the rest), else 0.1 ln f + 1."""
    if scaling.mscale_all_dim is not None and scaling.mscale is not None:
        return yarn_mscale(scaling.factor, scaling.mscale) / yarn_mscale(
            scaling.factor, scaling.mscale_all_dim
        )
    return yarn_mscale(scaling.factor)


def longrope_attention_factor(scaling: RopeScaling) -> float:
    """LongRoPE's factor on the cos/sin tables: the card's, else transformers' default
    sqrt(1 + ln factor / ln original_context), 1 where nothing is stretched."""
    if scaling.attention_factor is not None:
        return scaling.attention_factor
    if scaling.factor <= 1:
        return 1.0
    return math.sqrt(1 + math.log(scaling.factor) / math.log(scaling.original_context))


def longrope_switches(scaling: RopeScaling | None, context: int) -> bool:
    """Whether a rotary table of ``context`` positions needs LongRoPE's short set beside its
    long one: a sequence up to original_context uses the short factors, a longer one the
    long factors at every position (transformers decides per forward pass, by length)."""
    return (
        scaling is not None
        and scaling.type is RopeScalingType.LONGROPE
        and context > scaling.original_context
    )


def yarn_softmax_factor(scaling: RopeScaling | None) -> float:
    """The factor on every query-key product's softmax scale: DeepSeek's mscale_all_dim
    term squared (transformers' yarn_apply_mscale), 1 for every other scaling."""
    if scaling is None or scaling.mscale_all_dim is None:
        return 1.0
    return yarn_mscale(scaling.factor, scaling.mscale_all_dim) ** 2


@dataclass(frozen=True)
class Scheme:
    """Where a position scheme acts."""

    absolute: bool = False  # a table added to the embeddings
    rotary: bool = False  # rotates q/k dims
    stack_bias: bool = False  # one score bias per stack, shared by its layers
    layer_bias: bool = False  # a score bias computed in each layer (Transformer-XL)

    @property
    def score_bias(self) -> bool:
        return self.stack_bias or self.layer_bias


SCHEMES: dict[PositionType, Scheme] = {
    PositionType.SINUSOIDAL: Scheme(absolute=True),
    PositionType.LEARNED: Scheme(absolute=True),
    PositionType.ROPE: Scheme(rotary=True),
    PositionType.ALIBI: Scheme(stack_bias=True),
    PositionType.RELATIVE_BIAS: Scheme(stack_bias=True),
    PositionType.RELATIVE_XL: Scheme(layer_bias=True),
    PositionType.NONE: Scheme(),
}


FAIRSEQ_FIRST = 2  # fairseq's first position: after its padding index 1 (XGLM)


@dataclass(frozen=True)
class AbsolutePositions:
    """A table added to the token embeddings: fixed sinusoids or learned rows."""

    type: PositionType
    rows: int
    d_model: int
    offset: int = 0  # rows before the first token's (RoBERTa: 2)
    layout: SinusoidLayout = SinusoidLayout.INTERLEAVED  # a sinusoidal table's

    def params(self) -> int:
        return self.rows * self.d_model if self.type is PositionType.LEARNED else 0

    def embedding_params(self) -> int:
        return self.params()

    def flops(self, tally: Tally) -> None:
        tally.elementwise(self.d_model, C.EMBEDDING)

    def module(self, ctx: Any = None) -> Any:
        return modules().absolute_positions(self, ctx)


@dataclass(frozen=True)
class StackBias:
    """A score bias computed once per stack: ALiBi's slopes or T5's bucket table."""

    type: PositionType
    n_heads: int
    context: int
    causal: bool
    buckets: int

    def params(self) -> int:
        return self.buckets * self.n_heads if self.type is PositionType.RELATIVE_BIAS else 0

    def embedding_params(self) -> int:
        return self.params()

    def module(self, ctx: Any = None) -> Any:
        return modules().stack_bias(self, ctx)


@dataclass(frozen=True)
class RotarySpec:
    """RoPE on the first ``dims`` dims of each query and key head."""

    dims: int
    theta: float
    context: int
    scaling: RopeScaling | None = None  # frequencies stretched for long context (tables only)
    interleaved: bool = False  # pairs dims (2i, 2i + 1), not (i, i + dims/2)
    # proportional RoPE (Gemma 4's global layers): the frequencies of the whole head, only
    # the first ``rotating_pairs`` pairs with a non-zero angle; None: standard RoPE
    rotating_pairs: int | None = None

    def flops(self, tally: Tally, heads: int) -> None:
        tally.elementwise(cv.ROPE * self.dims * heads)

    def module(self, ctx: Any = None) -> Any:
        return modules().rotary(self, ctx)


@dataclass(frozen=True)
class RelativeXLSpec:
    """Transformer-XL's per-layer terms: W_R on distance embeddings, biases u and v."""

    d_model: int
    n_heads: int
    head_dim: int
    context: int

    def params(self) -> int:
        inner = self.n_heads * self.head_dim
        return self.d_model * inner + 2 * inner  # W_R, u, v

    def flops(self, tally: Tally) -> int:
        """Adds the per-layer terms; returns the FLOPs added per score."""
        h, hd = self.n_heads, self.head_dim
        tally.linear(self.d_model, h * hd, False)  # W_R on one embedding per distance
        tally.add(C.ATTENTION, tally.seq_len * h * hd)  # q + v
        tally.add(C.ATTENTION, tally.seq_len * h * cv.FLOPS_PER_MAC * hd)  # u . k, per key
        return cv.FLOPS_PER_MAC * hd + 2 * cv.ELEMENTWISE  # (q + v) . r, + u.k, * scale

    def module(self, ctx: Any = None) -> Any:
        return modules().relative_xl(self, ctx)


# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import math

    import torch
    from torch import nn

    from archdb.device import on_meta

    # --- absolute: added to the token embeddings -------------------------------------------

    class SinusoidalPositions(nn.Module):
        """Vaswani et al. 2017 (https://arxiv.org/abs/1706.03762), Section 3.5, in the
        table's layout (``sinusoid_table``)."""

        flop_class = "embedding"

        def __init__(
            self, max_len: int, d_model: int, layout: SinusoidLayout = SinusoidLayout.INTERLEAVED
        ) -> None:
            super().__init__()
            self.first = FAIRSEQ_FIRST if layout is SinusoidLayout.FAIRSEQ else 0
            table = sinusoid_table(self.first + max_len, d_model, layout)
            self.register_buffer("table", table, persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, d)
            return x + self.table[self.first : self.first + x.shape[1]]

    class LearnedPositions(nn.Module):
        """A learned vector per position (GPT-1/2/3, OPT)."""

        flop_class = "embedding"

        def __init__(self, rows: int, d_model: int, offset: int = 0) -> None:
            super().__init__()
            self.table = nn.Embedding(rows, d_model)
            self.offset = offset  # rows before the first token's (RoBERTa: 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.table.weight[self.offset : self.offset + x.shape[1]]

    # --- rotary: rotates query and key dims -------------------------------------------------

    class Rotary(nn.Module):
        """RoPE (Su et al. 2021, https://arxiv.org/abs/2104.09864) on the first ``dims`` dims.

        Pairs dims i and i + dims/2 (the GPT-NeoX / Llama layout in transformers), or with
        ``interleaved`` dims 2i and 2i + 1 (the paper's, GPT-J's and Meta's Llama code);
        partial rotary leaves the remaining dims as they are (GPT-J 0.25, Phi-2 0.4).
        """

        flop_class = "elementwise"

        def __init__(
            self,
            dims: int,
            theta: float,
            max_len: int,
            tables: tuple[torch.Tensor, torch.Tensor] | None = None,
            interleaved: bool = False,
            short_tables: tuple[torch.Tensor, torch.Tensor] | None = None,
        ) -> None:
            super().__init__()
            self.dims, self.theta, self.interleaved = dims, theta, interleaved
            if tables is None:
                tables = rotary_tables(dims, theta, max_len, interleaved=interleaved)
            cos, sin = tables
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
            # LongRoPE: the tables a sequence of at most len(short_cos) tokens uses instead
            self.short_len = 0
            if short_tables is not None:
                self.short_len = short_tables[0].shape[0]
                self.register_buffer("short_cos", short_tables[0], persistent=False)
                self.register_buffer("short_sin", short_tables[1], persistent=False)

        def forward(self, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
            """Each x (B, T, heads, head_dim) rotated, the tables sliced once for all (a
            layer's queries and keys): fewer traced nodes, the same arithmetic."""
            t = xs[0].shape[1]
            short = t <= self.short_len
            cos = (self.short_cos if short else self.cos)[:t].unsqueeze(1)  # (T, 1, dims)
            sin = (self.short_sin if short else self.sin)[:t].unsqueeze(1)
            return tuple(self.rotate(x, cos, sin) for x in xs)

        def rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
            """x rotated by the angles of ``cos`` and ``sin`` (rows of the tables), in the
            module's pair layout."""
            half = self.dims // 2
            partial = x.shape[-1] > self.dims
            rot = x[..., : self.dims] if partial else x
            if self.interleaved:  # (x0, x1, x2, x3, ...) -> (x1, x0, x3, x2, ...)
                swapped = rot.unflatten(-1, (half, 2)).flip(-1).flatten(-2)
            else:  # (first half, second half) -> (second, first): one traced node, not a cat
                swapped = rot.roll(half, -1)
            rotated = rot * cos + swapped * sin
            return torch.cat((rotated, x[..., self.dims :]), -1) if partial else rotated

        def extra_repr(self) -> str:
            layout = ", interleaved" if self.interleaved else ""
            return f"dims={self.dims}, theta={self.theta:g}{layout}"

    def rotary_tables(
        dims: int,
        theta: float,
        max_len: int,
        scaling: RopeScaling | None = None,
        interleaved: bool = False,
        rotating_pairs: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin tables (max_len, dims), shareable by every layer with this theta;
        ``scaling`` stretches the frequencies as transformers' rope_type of that name does;
        ``rotating_pairs`` keeps only the first pairs' frequencies, the rest at angle 0
        (transformers' 'proportional' RoPE, Gemma 4's global layers)."""
        if on_meta():
            half = dims // 2 if rotating_pairs is not None else len(range(0, dims, 2))
            return torch.empty(max_len, 2 * half), torch.empty(max_len, 2 * half)
        inv, attention_factor = scaled_frequencies(dims, theta, max_len, scaling)
        if rotating_pairs is not None:
            inv = torch.cat((inv[:rotating_pairs], torch.zeros(dims // 2 - rotating_pairs)))
        angles = torch.arange(max_len, dtype=torch.float32).unsqueeze(1) * inv  # (L, dims/2)
        cos, sin = angles.cos() * attention_factor, angles.sin() * attention_factor
        if (
            interleaved
        ):  # pair (2i, 2i + 1): out_2i = x_2i cos - x_2i+1 sin, out_2i+1 = ... + x_2i sin
            return cos.repeat_interleave(2, -1), torch.stack((-sin, sin), -1).flatten(-2)
        # the sign of rotate_half folded into the table: swap(x) * sin == rotate_half(x) * sin
        return torch.cat((cos, cos), -1), torch.cat((-sin, sin), -1)

    def scaled_frequencies(
        dims: int, theta: float, max_len: int, scaling: RopeScaling | None
    ) -> tuple[torch.Tensor, float]:
        """RoPE's inverse frequencies (dims/2,) after scaling, and YaRN's cos/sin factor.

        dynamic: the NTK base for a sequence of ``max_len`` tokens (the tables' length), as
        transformers computes it for that length; unchanged up to original_context. longrope:
        likewise the factor set a sequence of ``max_len`` tokens uses (the long one past
        original_context), and its attention factor."""
        exponents = torch.arange(0, dims, 2, dtype=torch.float32) / dims
        inv = 1.0 / theta**exponents
        if scaling is None:
            return inv, 1.0
        kind, factor = scaling.type.value, scaling.factor
        if kind == "linear":
            return inv / factor, 1.0
        if kind == "ntk-alpha":  # Hunyuan: the base stretched once by alpha (= factor)
            base = theta * factor ** (dims / (dims - 2))
            return 1.0 / base**exponents, 1.0
        original = scaling.original_context
        assert original is not None  # the schema requires it for the other types
        if kind == "longrope":  # one divisor per frequency: the set a max_len sequence uses
            chosen = scaling.long_factor if max_len > original else scaling.short_factor
            divisors = torch.tensor(chosen, dtype=torch.float32)
            return 1.0 / (divisors * theta**exponents), longrope_attention_factor(scaling)
        if kind == "dynamic":
            if max_len <= original:
                return inv, 1.0
            base = theta * ((factor * max_len / original) - (factor - 1)) ** (dims / (dims - 2))
            return 1.0 / base**exponents, 1.0
        if kind == "llama3":
            low_wavelen = original / scaling.low_freq_factor
            high_wavelen = original / scaling.high_freq_factor
            wavelen = 2 * math.pi / inv
            smooth = (original / wavelen - scaling.low_freq_factor) / (
                scaling.high_freq_factor - scaling.low_freq_factor
            )
            mid = (1 - smooth) * inv / factor + smooth * inv
            out = torch.where(wavelen > low_wavelen, inv / factor, inv)
            band = (wavelen <= low_wavelen) & (wavelen >= high_wavelen)
            return torch.where(band, mid, out), 1.0
        # yarn: interpolate the low-frequency dims, keep the high ones, a linear ramp between
        fast, slow = scaling.beta_fast or 32.0, scaling.beta_slow or 1.0

        def dim_of(rotations: float) -> float:
            return dims * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(theta))

        low, high = dim_of(fast), dim_of(slow)
        if scaling.truncate is not False:  # rounded out to whole dims (gpt-oss: the exact band)
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dims - 1)
        ramp = (torch.arange(dims // 2, dtype=torch.float32) - low) / max(high - low, 1e-3)
        extrapolate = 1 - ramp.clamp(0, 1)
        inv = (inv / factor) * (1 - extrapolate) + inv * extrapolate
        return inv, yarn_rotary_factor(scaling)

    # --- biases on attention scores ---------------------------------------------------------

    class AlibiBias(nn.Module):
        """ALiBi (Press et al. 2021, https://arxiv.org/abs/2108.12409): -slope * distance."""

        def __init__(self, n_heads: int, max_len: int) -> None:
            super().__init__()
            if on_meta():
                self.register_buffer(
                    "bias", torch.empty(n_heads, max_len, max_len), persistent=False
                )
                return
            slopes = torch.tensor(alibi_slopes(n_heads))
            pos = torch.arange(max_len)
            distance = (pos.view(1, -1) - pos.view(-1, 1)).abs().float()  # (L, L)
            self.register_buffer("bias", -slopes.view(-1, 1, 1) * distance, persistent=False)

        def forward(self, t_q: int, t_k: int) -> torch.Tensor:  # -> (heads, Tq, Tk)
            return self.bias[:, :t_q, :t_k]

    def alibi_slopes(n_heads: int) -> list[float]:
        """Geometric slopes 2^(-8/n * i); for n not a power of two, the paper's interleaving."""

        def power_of_two(n: int) -> list[float]:
            start = 2 ** (-8 / n)
            return [start ** (i + 1) for i in range(n)]

        if math.log2(n_heads).is_integer():
            return power_of_two(n_heads)
        closest = 2 ** math.floor(math.log2(n_heads))
        return power_of_two(closest) + power_of_two(2 * closest)[0::2][: n_heads - closest]

    class RelativeBias(nn.Module):
        """T5's bucketed relative position bias (Raffel et al. 2019, Section 2.1).

        One table per stack, shared by its layers; buckets are log-spaced beyond half of
        them. Decoders use one-sided (causal) buckets, encoders two-sided.
        """

        def __init__(
            self, n_buckets: int, n_heads: int, max_len: int, bidirectional: bool, max_distance: int
        ) -> None:
            super().__init__()
            self.table = nn.Embedding(n_buckets, n_heads)
            if on_meta():
                buckets = torch.empty(max_len, max_len, dtype=torch.long)
            else:
                pos = torch.arange(max_len)
                relative = pos.view(1, -1) - pos.view(-1, 1)  # key - query
                buckets = t5_buckets(relative, bidirectional, n_buckets, max_distance)
            self.register_buffer("buckets", buckets, persistent=False)

        def forward(self, t_q: int, t_k: int) -> torch.Tensor:  # -> (heads, Tq, Tk)
            return self.table(self.buckets[:t_q, :t_k]).permute(2, 0, 1)

    def t5_buckets(
        relative: torch.Tensor, bidirectional: bool, n_buckets: int, max_distance: int
    ) -> torch.Tensor:
        out = torch.zeros_like(relative)
        if bidirectional:
            n_buckets //= 2
            out = out + (relative > 0).long() * n_buckets
            relative = relative.abs()
        else:
            relative = -torch.clamp(relative, max=0)
        exact = n_buckets // 2
        is_small = relative < exact
        scaled = torch.log(relative.float().clamp(min=1) / exact) / math.log(max_distance / exact)
        large = exact + (scaled * (n_buckets - exact)).long()
        large = torch.clamp(large, max=n_buckets - 1)
        return out + torch.where(is_small, relative, large)

    class RelativeXL(nn.Module):
        """Transformer-XL relative positions (Dai et al. 2019, https://arxiv.org/abs/1901.02860).

        score(i, j) = q_i.k_j + u.k_j + (q_i + v).W_R R_{i-j}: sinusoidal embeddings R of the
        distance, projected per layer by W_R, with learned biases u and v per layer (the
        paper's code calls these untied biases; Gopher and Chinchilla use this scheme). This
        block returns the terms beyond q.k, already scaled, as a bias on the scores.
        """

        flop_class = "attention"

        def __init__(
            self,
            d_model: int,
            n_heads: int,
            head_dim: int,
            scale: float,
            table: torch.Tensor,
            distance: torch.Tensor,
        ) -> None:
            super().__init__()
            self.n_heads, self.head_dim, self.scale = n_heads, head_dim, scale
            self.proj = nn.Linear(d_model, n_heads * head_dim, bias=False)  # W_R
            self.u = nn.Parameter(torch.zeros(n_heads, head_dim))  # content bias
            self.v = nn.Parameter(torch.zeros(n_heads, head_dim))  # position bias
            self.register_buffer("table", table, persistent=False)  # (L, d): R_0 .. R_{L-1}
            self.register_buffer("distance", distance, persistent=False)  # (L, L): max(i - j, 0)

        def forward(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
            """q, k: (B, H, T, D) -> (B, H, T, T) scaled position and content-bias scores."""
            b, h, t, d = q.shape
            r = self.proj(self.table[:t]).view(t, h, d).permute(1, 2, 0)  # (H, D, T) by distance
            by_distance = torch.matmul(q + self.v.unsqueeze(1), r)  # (B, H, T, T)
            index = self.distance[:t, :t].expand(b, h, t, t)
            position = by_distance.gather(-1, index)  # column j holds distance i - j
            content = torch.matmul(self.u.unsqueeze(1), k.transpose(-1, -2))  # (B, H, 1, T)
            return (position + content) * self.scale

        def extra_repr(self) -> str:
            return f"heads={self.n_heads}, head_dim={self.head_dim}"

    def sinusoid_table(
        max_len: int, d_model: int, layout: SinusoidLayout = SinusoidLayout.INTERLEAVED
    ) -> torch.Tensor:
        """(max_len, d_model) sinusoids of positions (or distances) 0 .. max_len - 1: each
        frequency's sine and cosine interleaved, or the sines then the cosines (halves;
        fairseq's with its own frequencies); an odd width's last column zero."""
        if on_meta():
            return torch.empty(max_len, d_model)
        pos = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        half = d_model // 2
        if layout is SinusoidLayout.FAIRSEQ:  # 10000^(-k / (half - 1))
            freq = torch.exp(torch.arange(half).float() * (-math.log(10_000.0) / (half - 1)))
        else:  # 10000^(-2k / d)
            freq = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10_000.0) / d_model))
        table = torch.zeros(max_len, d_model)
        if layout is SinusoidLayout.INTERLEAVED:
            table[:, 0::2] = torch.sin(pos * freq)
            table[:, 1::2] = torch.cos(pos * freq)[:, :half]
        else:
            table[:, :half] = torch.sin(pos * freq[:half])
            table[:, half : 2 * half] = torch.cos(pos * freq[:half])
        return table

    def distance_index(max_len: int) -> torch.Tensor:
        if on_meta():
            return torch.empty(max_len, max_len, dtype=torch.long)
        pos = torch.arange(max_len)
        return (pos.view(-1, 1) - pos.view(1, -1)).clamp(min=0)

    # --- from specs ----------------------------------------------------------------------------

    def absolute_positions(s: AbsolutePositions, ctx: object = None) -> nn.Module:
        if s.type is PositionType.LEARNED:
            table = LearnedPositions(s.rows, s.d_model, s.offset)
            table.archdb_embedding = True
            return table
        return SinusoidalPositions(s.rows, s.d_model, s.layout)

    def stack_bias(s: StackBias, ctx: object = None) -> nn.Module:
        if s.type is PositionType.ALIBI:
            return AlibiBias(s.n_heads, s.context)
        table = RelativeBias(
            s.buckets,
            s.n_heads,
            s.context,
            bidirectional=not s.causal,
            max_distance=T5_MAX_DISTANCE,
        )
        table.archdb_embedding = True
        return table

    def rotary(s: RotarySpec, ctx) -> Rotary:  # the build shares one table per rotary shape
        return ctx.rotary(s.dims, s.theta, s.context, s.scaling, s.interleaved, s.rotating_pairs)

    def relative_xl(s: RelativeXLSpec, ctx) -> RelativeXL:  # shared by the stack's layers
        return ctx.relative_xl(s)

    return SimpleNamespace(
        SinusoidalPositions=SinusoidalPositions,
        LearnedPositions=LearnedPositions,
        Rotary=Rotary,
        rotary_tables=rotary_tables,
        scaled_frequencies=scaled_frequencies,
        AlibiBias=AlibiBias,
        alibi_slopes=alibi_slopes,
        RelativeBias=RelativeBias,
        t5_buckets=t5_buckets,
        RelativeXL=RelativeXL,
        sinusoid_table=sinusoid_table,
        distance_index=distance_index,
        absolute_positions=absolute_positions,
        stack_bias=stack_bias,
        rotary=rotary,
        relative_xl=relative_xl,
    )
