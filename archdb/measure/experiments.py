"""Two experiments on built models, plain functions of a card returning plain results
(which claims read them, and the cache of their results: ``archdb.reports.measured``).

- Norm placement and gradients (Xiong et al. 2020, https://arxiv.org/abs/2002.04745): at
  initialization, Pre-LN keeps the per-layer gradient norms even, Post-LN does not. The
  experiment builds the Pre-LN Transformer research card with each placement, at the
  card's depth and the toy rule's widths, and measures each decoder layer's FFN weight-gradient norm
  after one backward pass of the language-modelling loss, under the paper's Xavier
  initialization and under PyTorch's default one.
- Linear attention as a fast weight programmer (Schlag et al. 2021,
  https://arxiv.org/abs/2102.11174): the builder's linear-attention kernel is compared
  with a token-by-token fast weight programmer (a matrix written by outer products of
  values and keys, read by the query) and with the quadratic attention form.

Both are deterministic: fixed seeds, CPU.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from enum import StrEnum

import torch
import torch.nn.functional as F
from torch import nn

from archdb.builder.loss import lm_loss
from archdb.builder.model import EncoderDecoderLM, build_model, example_inputs
from archdb.builder.shrink import shrink
from archdb.parts import kernels as kernels_part
from archdb.plan.layout import fill_unknowns
from archdb.schema import Architecture, Card, NormPosition

LinearKernel = kernels_part.modules().LinearKernel

SEEDS = (0, 1, 2)
BATCH, SEQ_LEN = 8, 32


# --- norm placement: gradient norms by layer at initialization -------------------------------


class Init(StrEnum):
    XAVIER = "xavier"  # the paper's: Xavier-uniform linears, embeddings N(0, 1/d_model)
    TORCH_DEFAULT = "pytorch-default"  # what nn.Linear and nn.Embedding start from


@dataclass(frozen=True)
class GradientProfile:
    """Each decoder layer's FFN weight-gradient norm (bottom to top), mean over seeds."""

    position: NormPosition
    init: Init
    layer_norms: tuple[float, ...]

    @property
    def spread(self) -> float:
        """Largest over smallest layer gradient norm: 1 means perfectly even."""
        return max(self.layer_norms) / min(self.layer_norms)

    @property
    def top_over_bottom(self) -> float:
        return self.layer_norms[-1] / self.layer_norms[0]


@dataclass(frozen=True)
class NormPlacementResult:
    card_id: str
    dims: str  # the model the profiles were measured on
    profiles: tuple[GradientProfile, ...]

    def profile(self, position: NormPosition, init: Init = Init.XAVIER) -> GradientProfile:
        return next(p for p in self.profiles if p.position is position and p.init is init)

    def default_init_profile(self, position: NormPosition) -> GradientProfile:
        return self.profile(position, Init.TORCH_DEFAULT)


def with_norm_position(arch: Architecture, position: NormPosition) -> Architecture:
    """The same architecture with its norms moved; Post-LN has no final norm."""
    final = position is not NormPosition.POST
    norm = arch.norm.model_copy(update={"position": position, "final": final})
    return arch.model_copy(update={"norm": norm})


def experiment_architecture(card: Card) -> Architecture:
    """The card at its own depth with the toy rule's widths: the effect is one of depth,
    and toy widths keep the run to a few seconds (d_model 512 shows the same contrast)."""
    full, _ = fill_unknowns(card.architecture)
    toy = shrink(full).arch
    return toy.model_copy(
        update={"n_layers": full.n_layers, "n_encoder_layers": full.n_encoder_layers}
    )


def initialize(model: nn.Module, init: Init) -> None:
    if init is Init.TORCH_DEFAULT:
        return
    for module in model.modules():
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, module.embedding_dim**-0.5)


def ffn_gradient_norms(arch: Architecture, init: Init, seed: int) -> list[float]:
    """One backward pass at initialization; the norm of each decoder layer's FFN weight
    gradients (Xiong et al.'s W^FFN, Figure 3)."""
    torch.manual_seed(seed)
    model = build_model(arch)
    initialize(model, init)
    inputs = example_inputs(model, SEQ_LEN, BATCH)
    generator = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, arch.vocab_size, (BATCH, SEQ_LEN), generator=generator)
    lm_loss(model(*inputs), targets).total.backward()
    norms = []
    for layer in model.decoder.layers:
        weights = [p for p in layer.mlp.sublayer.parameters() if p.dim() == 2]
        norms.append(torch.sqrt(sum(p.grad.double().square().sum() for p in weights)).item())
    return norms


def norm_placement(card: Card) -> NormPlacementResult:
    """Post-LN against Pre-LN on the same card, under two initializations."""
    base = experiment_architecture(card)
    profiles = []
    for init in Init:
        for position in (NormPosition.POST, NormPosition.PRE):
            arch = with_norm_position(base, position)
            runs = [ffn_gradient_norms(arch, init, seed) for seed in SEEDS]
            means = tuple(statistics.fmean(layer) for layer in zip(*runs, strict=True))
            profiles.append(GradientProfile(position, init, means))
    enc = f"{base.n_encoder_layers} encoder + " if base.n_encoder_layers else ""
    dims = (
        f"{enc}{base.n_layers} decoder layers, d_model {base.d_model}, d_ff {base.mlp.d_ff}, "
        f"{base.attention.n_heads} heads, vocab {base.vocab_size}; batch {BATCH} x {SEQ_LEN} "
        f"random tokens; mean of seeds {', '.join(map(str, SEEDS))}"
    )
    return NormPlacementResult(card.id, dims, tuple(profiles))


# --- linear attention is a fast weight programmer ----------------------------


@dataclass(frozen=True)
class FastWeightResult:
    shape: str
    kernel_vs_programmer: float  # max |difference|, the builder's kernel vs the recurrence
    attention_vs_programmer: float  # the quadratic attention form vs the recurrence

    @property
    def max_difference(self) -> float:
        return max(self.kernel_vs_programmer, self.attention_vs_programmer)


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """elu(x) + 1, the positive feature map of Katharopoulos et al. (2020)."""
    return F.elu(x) + 1


def fast_weight_programmer(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Token by token: W += v phi(k)^T (an outer product), z += phi(k); y = W phi(q) / z.phi(q).

    q, k: (B, H, T, Dk); v: (B, H, T, Dv) -> (B, H, T, Dv).
    """
    b, h, t, dk = k.shape
    fast = torch.zeros(b, h, v.shape[-1], dk, dtype=v.dtype)  # the fast weight matrix
    norm = torch.zeros(b, h, dk, dtype=v.dtype)
    out = []
    for i in range(t):
        key, query = feature_map(k[:, :, i]), feature_map(q[:, :, i])
        fast = fast + v[:, :, i].unsqueeze(-1) * key.unsqueeze(-2)  # write: v k^T
        norm = norm + key
        read = (fast @ query.unsqueeze(-1)).squeeze(-1)  # read with the query
        out.append(read / (norm * query).sum(-1, keepdim=True))
    return torch.stack(out, dim=2)


def linear_attention_quadratic(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention with phi(q).phi(k) in place of exp(q.k), causal, normalized by row."""
    scores = feature_map(q) @ feature_map(k).transpose(-1, -2)  # (B, H, T, T)
    scores = scores.tril()
    return (scores @ v) / scores.sum(-1, keepdim=True)


def fast_weight_equivalence(
    seed: int = 0, shape: tuple[int, int, int, int, int] = (2, 4, 24, 16, 8)
) -> FastWeightResult:
    """Random queries, keys and values through all three forms; their largest difference."""
    b, h, t, dk, dv = shape
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(b, h, t, dk, generator=generator, dtype=torch.float64) for _ in range(2))
    v = torch.randn(b, h, t, dv, generator=generator, dtype=torch.float64)
    reference = fast_weight_programmer(q, k, v)
    kernel = LinearKernel()
    kernel.eps = 0.0  # the kernel's guard against 0/0 is not part of the identity
    return FastWeightResult(
        shape=f"batch {b}, {h} heads, {t} tokens, key width {dk}, value width {dv}, float64",
        kernel_vs_programmer=(kernel(q, k, v) - reference).abs().max().item(),
        attention_vs_programmer=(linear_attention_quadratic(q, k, v) - reference)
        .abs()
        .max()
        .item(),
    )


def uses_linear_kernel(card: Card) -> bool:
    """Whether the card's toy really runs the kernel the identity was checked on."""
    model = build_model(shrink(fill_unknowns(card.architecture)[0]).arch)
    return not isinstance(model, EncoderDecoderLM) and any(
        isinstance(m, LinearKernel) for m in model.modules()
    )
