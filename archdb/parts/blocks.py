"""Transformer blocks: how sublayers join the residual stream, serial or parallel.

A norm position is three optional norm slots around a sublayer f (archdb.parts.norms.NORM_SLOTS):
``x = after(x + branch(f(before(x))))``. Pre-norm fills ``before``, post-norm ``after``
(Vaswani et al. 2017), double/sandwich ``before`` and ``branch`` (Grok-1, Gemma 2),
post-branch only ``branch`` (OLMo 2). An empty slot is ``nn.Identity``.

ResiDual (Xie et al. 2023, https://arxiv.org/abs/2304.14802) keeps two streams: the
Post-LN stream x and a dual stream d that sums the raw sublayer outputs,
``x' = LN(x + f(x))``, ``d' = d + f(x)``; the stack returns ``x + LN(d)``. Every block takes
and returns ``(x, dual)``; ``dual`` is None outside ResiDual.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

# --- torch modules -------------------------------------------------------------------------


@functools.cache
def modules() -> SimpleNamespace:
    """This part's torch modules, defined on first use: the plan and the formulas never
    need torch, which takes over a second to import."""
    import torch
    from torch import nn

    from archdb.parts.attributes import set_plain

    Stream = tuple[torch.Tensor, torch.Tensor | None]

    def scaled(y: torch.Tensor, multiplier: float | None) -> torch.Tensor:
        """A sublayer's output as it joins the residual stream (Granite, MiniCPM: m * f(x))."""
        return y if multiplier is None else y * multiplier

    class Residual(nn.Module):
        """One sublayer on the residual stream, with its norm slots: after(a * s + m * y) for
        y = branch(f(before(x))), the skip s = x, or before(x) where ``normed_skip``
        (MiniMax-01), a the ``skip`` factor and m the ``multiplier`` (None: 1)."""

        def __init__(
            self,
            sublayer: nn.Module,
            before: nn.Module,
            branch: nn.Module,
            after: nn.Module,
            multiplier: float | None = None,
            skip: float | None = None,
            normed_skip: bool = False,
        ) -> None:
            super().__init__()
            self.before, self.sublayer, self.branch, self.after = before, sublayer, branch, after
            set_plain(self, multiplier=multiplier, skip=skip, normed_skip=normed_skip)

        def forward(self, x: torch.Tensor, dual: torch.Tensor | None, *args) -> Stream:
            h = self.before(x)
            y = scaled(self.branch(self.sublayer(h, *args)), self.multiplier)
            return self.after(scaled(h if self.normed_skip else x, self.skip) + y), dual

        def extra_repr(self) -> str:
            parts = [
                f"{name}={value}"
                for name, value in (("multiplier", self.multiplier), ("skip", self.skip))
                if value is not None
            ]
            return ", ".join(parts + (["normed_skip=True"] if self.normed_skip else []))

    class ResiDualResidual(Residual):
        """ResiDual: the Post-LN stream and the dual stream both receive f(x)."""

        def forward(self, x: torch.Tensor, dual: torch.Tensor | None, *args) -> Stream:
            y = scaled(self.sublayer(x, *args), self.multiplier)
            assert dual is not None
            return self.after(x + y), dual + y

    class PerLayerGate(nn.Module):
        """A layer's per-layer input joins the stream after its MLP (Gemma 3n, Gemma 4
        E2B/E4B): x + norm(proj(act(gate(x)) * input))."""

        def __init__(self, d_model: int, width: int, act: nn.Module, norm: nn.Module) -> None:
            super().__init__()
            self.gate = nn.Linear(d_model, width, bias=False)
            self.act = act
            self.proj = nn.Linear(width, d_model, bias=False)
            self.norm = norm

        def branch(self, x: torch.Tensor, per_layer: torch.Tensor) -> torch.Tensor:
            return self.norm(self.proj(self.act(self.gate(x), per_layer)))

        def forward(self, x: torch.Tensor, per_layer: torch.Tensor) -> torch.Tensor:
            return x + self.branch(x, per_layer)

    class SerialBlock(nn.Module):
        """Attention (or a recurrent mixer), then (in an encoder-decoder's decoder)
        cross-attention, then the MLP; the mixer or the MLP may be absent (Mamba-2's
        mixer-only layers, Nemotron-H's MLP-only layers)."""

        def __init__(
            self,
            attn: Residual | None,
            mlp: Residual | None,
            cross: Residual | None = None,
            scalar: bool = False,
            per_layer: PerLayerGate | None = None,
        ) -> None:
            super().__init__()
            self.attn, self.cross, self.mlp = attn, cross, mlp
            self.per_layer = per_layer  # per-layer embeddings' gate (Gemma 3n/4)
            # Gemma 4: a learned scalar on the layer's output, a buffer as in transformers
            self.layer_scalar = nn.Buffer(torch.ones(1)) if scalar else None

        def forward(
            self,
            x: torch.Tensor,
            dual: torch.Tensor | None,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
            per_layer: torch.Tensor | None = None,
        ) -> Stream:
            if self.attn is not None:
                x, dual = self.attn(x, dual, bias)
            if self.cross is not None:
                x, dual = self.cross(x, dual, None, memory)
            if self.mlp is not None:
                x, dual = self.mlp(x, dual)
            if self.per_layer is not None:
                assert per_layer is not None
                x = self.per_layer(x, per_layer)
            if self.layer_scalar is not None:
                x = x * self.layer_scalar
            return x, dual

    class ParallelBlock(nn.Module):
        """x + attn(n1(x)) + mlp(n2(x)) (GPT-J, PaLM); one shared norm or one each (GPT-NeoX)."""

        def __init__(
            self,
            attn: nn.Module,
            mlp: nn.Module,
            before_attn: nn.Module,
            before_mlp: nn.Module | None,
            branch_attn: nn.Module,
            branch_mlp: nn.Module,
            after: nn.Module,
            multiplier: float | None = None,
        ) -> None:
            super().__init__()
            self.attn, self.mlp = attn, mlp
            self.multiplier = multiplier
            self.before_attn, self.before_mlp = before_attn, before_mlp  # before_mlp None: shared
            self.branch_attn, self.branch_mlp, self.after = branch_attn, branch_mlp, after

        def forward(
            self,
            x: torch.Tensor,
            dual: torch.Tensor | None,
            bias: torch.Tensor | None = None,
            memory: torch.Tensor | None = None,
        ) -> Stream:
            ha = self.before_attn(x)
            hm = ha if self.before_mlp is None else self.before_mlp(x)
            attn = scaled(self.branch_attn(self.attn(ha, bias)), self.multiplier)
            y = x + attn + scaled(self.branch_mlp(self.mlp(hm)), self.multiplier)
            return self.after(y), dual

    class Stack(nn.Module):
        """A stack of blocks with its final norm and, for T5/ALiBi, its score bias."""

        def __init__(
            self,
            layers: list[nn.Module],
            final_norm: nn.Module,
            position_bias: nn.Module | None,
            resi_dual: bool,
            streams: nn.Module | None = None,
        ) -> None:
            super().__init__()
            self.layers = nn.ModuleList(layers)
            self.streams = streams  # Gemma 3n's AltUp streams (archdb.builder.altup)
            self.final_norm = final_norm
            self.position_bias = position_bias  # computed once, shared by the layers (T5)
            self.resi_dual = resi_dual

        def forward(
            self,
            x: torch.Tensor,
            memory: torch.Tensor | None = None,
            per_layer: torch.Tensor | None = None,
        ) -> torch.Tensor:
            """per_layer: (B, T, layers, width), each layer's own input (per-layer embeddings)."""
            t = x.shape[1]
            bias = None if self.position_bias is None else self.position_bias(t, t)
            dual = x if self.resi_dual else None
            if self.streams is not None:
                x = self.streams.expand(x)
            for i, layer in enumerate(self.layers):
                if per_layer is None:
                    x, dual = layer(x, dual, bias, memory)
                else:
                    x, dual = layer(x, dual, bias, memory, per_layer[:, :, i])
            if self.streams is not None:
                x = self.streams.collapse(x)
            if dual is not None:
                return x + self.final_norm(dual)
            return self.final_norm(x)

    return SimpleNamespace(
        Stream=Stream,
        scaled=scaled,
        Residual=Residual,
        ResiDualResidual=ResiDualResidual,
        PerLayerGate=PerLayerGate,
        SerialBlock=SerialBlock,
        ParallelBlock=ParallelBlock,
        Stack=Stack,
    )
