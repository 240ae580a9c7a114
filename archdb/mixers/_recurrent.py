"""The pieces the recurrent token mixers' torch modules share (each mixer's own module is
in its plugin, archdb.mixers: Mamba-2, Gated DeltaNet, LFM2's short conv, Mamba-1, Kimi
Delta Attention, Griffin's RG-LRU, ...).

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
