"""Non-attention token mixers, as specs made by their plugins (archdb.mixers: Mamba-2,
Gated DeltaNet, LFM2's short conv, Mamba-1, Kimi Delta Attention, Griffin's RG-LRU,
MiniMax-01's lightning attention, ...).

Each spec carries its parameters (laid out as transformers' implementation, so counts
match it exactly), its FLOPs, its state and its module factory. ``RECURRENT`` maps a
layer-pattern entry to the maker of its spec.

FLOP convention for a recurrent mixer: the per-token cost of the recurrent form (one state
update and one read-out per token, as in decoding), every elementwise operation 1 FLOP per
element, a depthwise convolution 2 per multiply-add; parameter-only work (A = -exp(A_log))
once per forward. A chunked (SSD) kernel computes the same outputs with a different
operation count; the recurrent form is the stated one.

State convention: a recurrent mixer keeps a fixed-size state per sequence (the SSM or
delta-rule state, plus the last conv_kernel - 1 inputs of its convolution), whatever the
context length: it is counted once, not per token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from archdb.mixers import MIXERS, MixerPlugin
from archdb.schema import LayerKind

from .layout import LayerSpec

RecurrentMixer = Any  # a mixer plugin's spec (archdb.mixers)
Reader = Any  # plan._Reader, not imported: plan imports this module


def _plugin_maker(plugin: MixerPlugin) -> Callable[[Reader, LayerSpec], RecurrentMixer]:
    return lambda r, spec: plugin.plan(plugin.sizes_of(r.a), r)


# layer-pattern entry -> the spec of a non-attention mixer
RECURRENT: dict[LayerKind, Callable[[Reader, LayerSpec], RecurrentMixer]] = {
    LayerKind(kind): _plugin_maker(plugin) for kind, plugin in MIXERS.items()
}
