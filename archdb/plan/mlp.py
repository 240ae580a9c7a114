"""Feed-forward specs: activations (one registry), dense and gated MLPs, mixtures of experts.

An activation is a rule (its function, FLOPs per element, whether it is gated), declared
with its enum value in ``archdb.choices.activations``; the torch module is
``archdb.builder.mlp.Act`` running that function.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from archdb import conventions as cv
from archdb.choices.activations import (
    ACTIVATIONS,
    Activation,
    ActivationRule,
    ClampedSwiGLU,
    ClippedSwiGLU,
)
from archdb.choices.activations import CLAMPED_SWIGLU as CLAMPED_SWIGLU  # re-exported
from archdb.choices.activations import XIELU_RULE as XIELU_RULE  # re-exported
from archdb.conventions import FlopClass as C
from archdb.schema import GroupScore, RouterScore
from archdb.tally import Tally, linear_params

from .norms import NormSpec, bare_rms


def _gelu_exact(x):  # the erf form (GPT-NeoX, BERT)
    import torch.nn.functional as F

    return F.gelu(x)


GELU_EXACT = ActivationRule("gelu-exact", _gelu_exact)  # GELU/GeGLU with gelu_approximation exact


def activation_rule(
    activation: Activation,
    gelu_exact: bool = False,
    clamp: ClampedSwiGLU | ClippedSwiGLU | None = None,
) -> ActivationRule:
    """The rule of an activation; GELU and GeGLU by erf when ``gelu_exact``; a clamped or
    clipped SwiGLU with the card's ``clamp`` (limit, and alpha) when given."""
    if gelu_exact and activation in (Activation.GELU, Activation.GEGLU):
        return GELU_EXACT
    rule = ACTIVATIONS[activation]
    if clamp is not None and activation in (Activation.CLAMPED_SWIGLU, Activation.CLIPPED_SWIGLU):
        return ActivationRule(rule.name, clamp.gate, rule.flops_per_element, clamp)
    return rule


@dataclass(frozen=True)
class DenseMLP:
    """down(act(up(x))), or down(act(gate(x)) * up(x)) for gated activations."""

    d_model: int
    d_ff: int  # width of one branch
    activation: Activation
    bias: bool
    gelu_exact: bool = False  # GELU/GeGLU by erf rather than the tanh approximation
    clamp: ClampedSwiGLU | ClippedSwiGLU | None = None  # a clamped/clipped SwiGLU's limits
    gate_multiplier: float | None = None  # act(m * gate(x)) (Falcon-H1 mlp_multipliers[0])
    output_multiplier: float | None = None  # m * down(...) (Falcon-H1 mlp_multipliers[1])
    sparsity: float | None = None  # Gemma 3n's gaussian top-k target on the gate
    channel_mix: bool = False  # RWKV: token-shifted inputs, a sigmoid receptance gate
    token_shift: bool = False  # RWKV-7: the input interpolated with the previous token's

    @property
    def rule(self) -> ActivationRule:
        return activation_rule(self.activation, self.gelu_exact, self.clamp)

    def params(self) -> int:
        branches = 2 if self.activation.gated else 1
        d, f = self.d_model, self.d_ff
        learned = len(self.rule.learned)  # xIELU's alpha_p and alpha_n
        if self.channel_mix:  # two mixing weights per channel and the receptance
            learned += 2 * d + linear_params(d, d, False)
        if self.token_shift:  # one mixing weight per channel
            learned += d
        return branches * linear_params(d, f, self.bias) + linear_params(f, d, self.bias) + learned

    def inactive_params(self) -> int:
        return 0

    def cache_entries(self, context: int) -> int:
        """RWKV's channel mix keeps the previous token's input; other MLPs keep nothing."""
        return self.d_model if self.channel_mix or self.token_shift else 0

    def flops(self, tally: Tally, tokens: int | None = None) -> None:
        tokens = tally.seq_len if tokens is None else tokens
        gated, d, f = self.activation.gated, self.d_model, self.d_ff
        if self.channel_mix:  # x m + shifted (1 - m) for key and receptance; the gate
            tally.add(C.ELEMENTWISE, tokens * 2 * 3 * d + 2 * d)  # 1 - m: once a forward
            tally.linear(d, d, False, tokens)
            tally.add(C.ELEMENTWISE, tokens * 2 * d)  # sigmoid, and its product
        if self.token_shift:  # x + (previous - x) m
            tally.add(C.ELEMENTWISE, tokens * 3 * d)
        for _ in range(2 if gated else 1):
            tally.linear(d, f, self.bias, tokens)
        per = self.rule.flops_per_element + (cv.ELEMENTWISE if gated else 0)  # (+ gating product)
        tally.add(C.ELEMENTWISE, tokens * f * per + self.rule.flops_per_call)
        if self.gate_multiplier is not None:
            tally.add(C.ELEMENTWISE, tokens * f)
        if self.sparsity is not None:  # mean, std; mean + std * k per token; g - cut, relu
            per_token = (cv.REDUCTION + cv.STD + 2 * cv.ELEMENTWISE) * f + 2 * cv.ELEMENTWISE
            tally.add(C.ELEMENTWISE, tokens * per_token)
        tally.linear(f, d, self.bias, tokens)
        if self.output_multiplier is not None:
            tally.add(C.ELEMENTWISE, tokens * d)


def _softmax_scores(logits):
    return logits.softmax(dim=-1)


def _sigmoid_scores(logits):
    return logits.sigmoid()


def _sqrt_softplus_scores(logits):
    import torch.nn.functional as F

    return F.softplus(logits).sqrt()


@dataclass(frozen=True)
class ScoreRule:
    """Router logits -> one score per expert, and what that costs per expert."""

    name: str
    fn: Callable
    flop_class: C
    flops_per_expert: int


ROUTER_SCORES: dict[RouterScore, ScoreRule] = {
    RouterScore.SOFTMAX: ScoreRule("softmax", _softmax_scores, C.SOFTMAX, cv.SOFTMAX),
    RouterScore.SIGMOID: ScoreRule("sigmoid", _sigmoid_scores, C.ELEMENTWISE, cv.ELEMENTWISE),
    # softplus, then its square root
    RouterScore.SQRT_SOFTPLUS: ScoreRule(
        "sqrt-softplus", _sqrt_softplus_scores, C.ELEMENTWISE, 2 * cv.ELEMENTWISE
    ),
}


@dataclass(frozen=True)
class RouterSpec:
    """Token -> its k experts and their weights, in this order (DeepSeek-V3's
    inference/model.py Gate; transformers' Mixtral, Qwen3-MoE, DeepSeek-V2/V3 routers):

    1. logits = proj(x); scores = score(logits) (softmax over experts, or sigmoid);
    2. choice = scores (+ the correction bias, which only chooses);
    3. groups: rank each group (its max, or the sum of its two best choice values), keep
       the top_k_groups best, mask the other groups' experts out of the choice;
    4. the k experts with the highest choice; their weights are their *scores*;
    5. normalize: weights / their sum; then weights * scale.

    Softmax scores normalized, without bias or groups, take Mixtral's shorter route (a
    softmax over the k chosen logits): the same weights, fewer operations.
    """

    d_model: int
    n_experts: int
    top_k: int
    bias: bool = False  # on the logit projection (gpt-oss)
    score: RouterScore = RouterScore.SOFTMAX
    normalize: bool = True
    n_groups: int = 1
    top_k_groups: int = 1
    group_score: GroupScore | None = None
    correction_bias: bool = False  # a buffer: not a parameter
    scale: float = 1.0
    zero_experts: int = 0  # LongCat-Flash: identity candidates after the routed experts
    # DeepSeek-V4's hash layers: the experts are a (hash_vocab, top_k) buffer's row for the
    # token id, not the top-k of the scores, which still weight them; 0: top-k routing
    hash_vocab: int = 0

    @property
    def candidates(self) -> int:
        """What the router scores: the routed experts, then the zero-computation ones."""
        return self.n_experts + self.zero_experts

    @property
    def rule(self) -> ScoreRule:
        return ROUTER_SCORES[self.score]

    @property
    def grouped(self) -> bool:
        return self.n_groups > 1 and self.top_k_groups < self.n_groups

    @property
    def softmax_of_top_k(self) -> bool:
        """Mixtral's route: top-k of the logits, a softmax over those k."""
        plain = not self.grouped and not self.correction_bias
        return plain and self.normalize and self.score is RouterScore.SOFTMAX

    def params(self) -> int:
        return linear_params(self.d_model, self.candidates, self.bias)

    def flops(self, tally: Tally) -> None:
        e, k = self.candidates, self.top_k
        tally.linear(self.d_model, e, self.bias)
        if self.softmax_of_top_k:
            tally.add(C.SOFTMAX, tally.seq_len * cv.SOFTMAX * k)
            return
        tally.elementwise(e * self.rule.flops_per_expert, self.rule.flop_class)
        if self.correction_bias:
            tally.elementwise(e)  # scores + bias
        if self.grouped and self.group_score is GroupScore.MAX:
            tally.elementwise(e * cv.REDUCTION)  # each group's max over its experts
        elif self.grouped:
            tally.elementwise(2 * self.n_groups * cv.REDUCTION)  # sum of each group's best 2
        if self.normalize:
            tally.elementwise(k * cv.REDUCTION + 1 + k)  # sum, + epsilon, divide
        if self.scale != 1.0:
            tally.elementwise(k)


@dataclass(frozen=True)
class MoESpec:
    """A top-k router over routed experts, plus shared experts every token uses."""

    router: RouterSpec
    expert: DenseMLP
    shared: DenseMLP | None
    shared_gate: bool = False  # sigmoid(Linear(d -> 1)) scales the shared experts' output
    # Gemma 4: a dense MLP beside the experts, and the norms of the two branches (the dense
    # branch's post-norm, the experts' pre- and post-norm; the block holds the other two)
    beside: DenseMLP | None = None
    branch_norm: NormSpec | None = None
    router_scales: bool = False  # Gemma 4's router: own bare norm, channel and expert scales
    output_multiplier: float | None = None  # m * (experts + shared) (MiniMax's MLP beta)
    # latent MoE (Nemotron 3 Super): the experts work at expert.d_model; projections into
    # and out of that width around them, with this bias (None: no latent projections)
    latent_bias: bool | None = None

    BRANCH_NORMS = 3  # beyond the block's pre- and post-norm of the MLP sublayer

    @property
    def d_model(self) -> int:
        return self.router.d_model

    @property
    def n_experts(self) -> int:
        return self.router.n_experts

    @property
    def n_active(self) -> int:
        return self.router.top_k

    @property
    def latent(self) -> int | None:
        """The width the routed experts work at, where it is not d_model (latent MoE)."""
        return self.expert.d_model if self.latent_bias is not None else None

    @property
    def reads_residual(self) -> bool:
        """The sublayer takes the residual stream un-normed and norms each branch itself."""
        return self.beside is not None

    def params(self) -> int:
        n = self.router.params()
        n += self.d_model + self.n_experts if self.router_scales else 0
        n += self.n_experts * self.expert.params()
        if self.latent is not None:  # into the latent width and back, once per layer
            n += linear_params(self.d_model, self.latent, bool(self.latent_bias))
            n += linear_params(self.latent, self.d_model, bool(self.latent_bias))
        n += linear_params(self.d_model, 1, False) if self.shared_gate else 0
        if self.beside is not None:
            assert self.branch_norm is not None
            n += self.beside.params() + self.BRANCH_NORMS * self.branch_norm.params(self.d_model)
        return n + (self.shared.params() if self.shared else 0)

    def inactive_params(self) -> int:
        return (self.n_experts - self.n_active) * self.expert.params()

    def flops(self, tally: Tally) -> None:
        t, d, k = tally.seq_len, self.d_model, self.n_active
        if self.router_scales:  # bare RMS norm, * scale * d^-0.5; softmax over all, renorm
            bare_rms(self.branch_norm.eps if self.branch_norm else None).flops(tally, d)
            tally.elementwise(2 * d)
            tally.linear(d, self.n_experts, self.router.bias)
            tally.add(C.SOFTMAX, t * cv.SOFTMAX * self.n_experts)
            tally.elementwise(cv.REDUCTION * k + 2 * k)  # sum, divide, * expert scale
        else:
            self.router.flops(tally)
        if self.beside is not None:
            assert self.branch_norm is not None
            for _ in range(self.BRANCH_NORMS):
                self.branch_norm.flops(tally, d)
            self.beside.flops(tally)
            tally.elementwise(d)  # dense + experts
        # k experts per token; with zero experts that is the most a token can run
        self.expert.flops(tally, t * k)
        if self.latent is not None:  # project in, weight and sum at the latent width, out
            tally.linear(d, self.latent, bool(self.latent_bias))
            tally.elementwise(2 * k * self.latent)
            tally.linear(self.latent, d, bool(self.latent_bias))
        else:
            tally.elementwise(2 * k * d)  # weight each expert's output, sum them
        if self.shared is not None:
            self.shared.flops(tally)
            tally.elementwise(d)
        if self.shared_gate:
            tally.linear(d, 1, False)
            tally.elementwise(1 + d)  # sigmoid, then the product
        if self.output_multiplier is not None:
            tally.elementwise(d)
