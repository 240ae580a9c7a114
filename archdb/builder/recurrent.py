"""Recurrent token mixers as torch modules: Mamba-2 (SSD), and the pieces the mixer plugins'
modules share (a plugin's own module is in its plugin, archdb.mixers: Gated DeltaNet, LFM2's
short conv, Mamba-1, Kimi Delta Attention, Griffin's RG-LRU, ...).

Parameters are laid out as in transformers (Mamba2Mixer; Qwen3-Next's gated DeltaNet;
MambaMixer), so full-size counts match. The forward pass is the plain recurrent reference,
one token at a time: slow, but short enough to read against the papers and exactly the operations
``archdb.plan.recurrent`` counts. Tensors are (batch, time, channels).

Only the state's own recurrence is a loop over tokens; whatever does not depend on the
previous state (the input's outer product, the read-out from each state) runs on all tokens
at once, on the stacked states. The same operations on the same elements, so the same
count, but the traced graph (fvcore) holds two or three nodes a token instead of a dozen
or more, and tracing time grows with the nodes.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archdb.choices.norms import RMS_EPS
from archdb.schema import Mamba2Norm


class CausalDepthwiseConv(nn.Module):
    """A causal conv of width ``kernel`` per channel, written as windows times taps."""

    def __init__(self, channels: int, kernel: int, bias: bool) -> None:
        super().__init__()
        self.kernel = kernel
        self.weight = nn.Parameter(torch.empty(channels, 1, kernel))  # nn.Conv1d's layout
        self.bias = nn.Parameter(torch.empty(channels)) if bias else None
        if self.weight.device.type != "meta":
            nn.init.normal_(self.weight, std=kernel**-0.5)
            if self.bias is not None:
                nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        padded = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))  # (B, C, K - 1 + T)
        windows = padded.unfold(2, self.kernel, 1)  # (B, C, T, K)
        y = (windows * self.weight).sum(-1).transpose(1, 2)  # weight (C, 1, K) broadcasts
        return y + self.bias if self.bias is not None else y


def _init_vector(n: int, value: float) -> nn.Parameter:
    return nn.Parameter(torch.full((n,), value))


class Mamba2Mixer(nn.Module):
    """Mamba-2's SSD mixer (Dao and Gu 2024, https://arxiv.org/abs/2405.21060)."""

    flop_class = "elementwise"

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        head_dim: int,
        state_size: int,
        n_groups: int,
        conv_kernel: int,
        conv_bias: bool,
        proj_bias: bool,
        norm: Mamba2Norm = Mamba2Norm.GATED,
        input_multiplier: float | None = None,
        projection_multipliers: tuple[float, ...] | None = None,
        output_multiplier: float | None = None,
        norm_eps: float | None = None,
        time_step_floor: float | None = None,
    ) -> None:
        super().__init__()
        self.n_heads, self.head_dim, self.state_size = n_heads, head_dim, state_size
        self.time_step_floor = time_step_floor  # Zamba2 clamps dt below at time_step_min
        self.norm, self.eps = norm, RMS_EPS if norm_eps is None else norm_eps
        self.input_multiplier, self.output_multiplier = input_multiplier, output_multiplier
        # Falcon-H1's muP vector: a factor per part of in_proj's output (z, x, B, C, dt)
        self.projection_multipliers = projection_multipliers
        self.n_groups = n_groups
        self.inner = n_heads * head_dim
        conv_dim = self.inner + 2 * n_groups * state_size
        self.in_proj = nn.Linear(d_model, self.inner + conv_dim + n_heads, bias=proj_bias)
        self.conv1d = CausalDepthwiseConv(conv_dim, conv_kernel, conv_bias)
        self.dt_bias = _init_vector(n_heads, 0.0)
        self.A_log = _init_vector(n_heads, 0.0)  # A = -exp(A_log) = -1
        self.D = _init_vector(n_heads, 1.0)
        self.norm_weight = _init_vector(self.inner, 1.0) if norm is not Mamba2Norm.NONE else None
        self.out_proj = nn.Linear(self.inner, d_model, bias=proj_bias)

    def forward(self, x: torch.Tensor, *_: object) -> torch.Tensor:
        b, t, _d = x.shape
        h, p, n, g = self.n_heads, self.head_dim, self.state_size, self.n_groups
        if self.input_multiplier is not None:
            x = x * self.input_multiplier
        projected = self.in_proj(x)
        if self.projection_multipliers is not None:
            parts = projected.split([self.inner, self.inner, g * n, g * n, h], dim=-1)
            factors = self.projection_multipliers
            projected = torch.cat([part * m for part, m in zip(parts, factors, strict=True)], -1)
        z, xbc, dt = projected.split([self.inner, self.inner + 2 * g * n, h], dim=-1)
        xbc = F.silu(self.conv1d(xbc))
        xs, bs, cs = xbc.split([self.inner, g * n, g * n], dim=-1)
        xs = xs.reshape(b, t, h, p)
        bs = bs.reshape(b, t, g, n).repeat_interleave(h // g, dim=2)  # (B, T, H, N)
        cs = cs.reshape(b, t, g, n).repeat_interleave(h // g, dim=2)
        a = -torch.exp(self.A_log)
        dt = F.softplus(dt + self.dt_bias)  # (B, T, H)
        if self.time_step_floor is not None:
            dt = dt.clamp(min=self.time_step_floor)
        decay = torch.exp(dt * a)
        dtx = dt.unsqueeze(-1) * xs  # (B, T, H, P)
        inputs = dtx[..., None] * bs[:, :, :, None]  # (dt x) B^T: (B, T, H, P, N)
        states = linear_scan(decay[..., None, None], inputs)
        y = torch.matmul(states, cs[..., None]).squeeze(-1)  # y = h C: (B, T, H, P)
        y = (y + xs * self.D[:, None]).reshape(b, t, self.inner)
        if self.norm is Mamba2Norm.BEFORE_GATE:
            y = self._grouped_norm(y) * F.silu(z)
        elif self.norm is Mamba2Norm.GATED:
            y = self._grouped_norm(y * F.silu(z))
        else:
            y = y * F.silu(z)
        y = self.out_proj(y)
        return y if self.output_multiplier is None else y * self.output_multiplier

    def _grouped_norm(self, y: torch.Tensor) -> torch.Tensor:
        """RMSNorm over each group's channels, then the learned scale."""
        b, t, g = y.shape[0], y.shape[1], self.n_groups
        y = F.rms_norm(y.reshape(b, t, g, self.inner // g), (self.inner // g,), eps=self.eps)
        return y.reshape(b, t, self.inner) * self.norm_weight


def l2_normalize(x: torch.Tensor) -> torch.Tensor:
    """x / sqrt(sum x^2 + 1e-6) over the last dim (FLA's l2norm: eps added, not clamped)."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + 1e-6)


def linear_scan(decay: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """h_t = decay_t * h_{t-1} + inputs_t from h_0 = 0, over dim 1 (time) -> every h_t.
    ``decay`` broadcasts against ``inputs`` after the time dim. One multiply and one add
    per element and token: the recurrence is the only part that must be sequential."""
    state = torch.zeros_like(inputs[:, 0])
    states = []
    for decay_t, input_t in zip(decay.unbind(1), inputs.unbind(1), strict=True):
        state = state * decay_t + input_t
        states.append(state)
    return torch.stack(states, dim=1)


def gated_delta_rule(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, beta: torch.Tensor
) -> torch.Tensor:
    """The recurrence, one token at a time: q, k (B, T, H, Dk), v (B, T, H, Dv), the write
    strength beta (B, T, H) and the log decay g, one per head (B, T, H: Gated DeltaNet) or
    one per key channel (B, T, H, Dk: KDA) -> outputs (B, T, H, Dv)."""
    b, _, h, dk = k.shape
    state = v.new_zeros(b, h, dk, v.shape[-1])
    states = []
    decays = torch.exp(g)
    decays = decays[..., None, None] if g.dim() == 3 else decays[..., None]
    steps = zip(  # one unbind per tensor: per-step indexing would add traced nodes
        k[..., None].unbind(1),
        k[..., None, :].unbind(1),
        v[..., None, :].unbind(1),
        decays.unbind(1),
        beta[..., None, None].unbind(1),
        strict=True,
    )
    for k_i, k_row_i, v_i, decay_i, beta_i in steps:  # k_i (B, H, Dk, 1), k_row_i (B, H, 1, Dk)
        state = state * decay_i
        read = torch.matmul(k_row_i, state)  # k^T S: (B, H, 1, Dv), a multiply-add each
        delta = (v_i - read) * beta_i
        state = state + k_i * delta  # the outer product k delta^T
        states.append(state)
    return (torch.stack(states, dim=1) * q[..., None]).sum(-2)  # q^T S per token
