"""Phi-3-small: block-sparse layers beside dense ones, the gegelu activation, muP factors.

The block-sparse layout is checked against a direct transcription of its rule (vLLM's
``get_sparse_attn_mask`` for the released config): the torch mask, the closed-form key
counts, and, through gradients, the keys a built kernel actually reads.
"""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from archdb.builder.model import build_model
from archdb.builder.shrink import shrink
from archdb.choices.activations import Activation
from archdb.measure.analytic import flops, param_count
from archdb.measure.flops import measure_flops
from archdb.measure.params import full_size_params
from archdb.parts import blocksparse as blocksparse_part
from archdb.parts import kernels as kernels_part
from archdb.parts import mlp as mlp_part
from archdb.parts.attention import HeadAttention
from archdb.parts.blocksparse import BlockSparseLayout
from archdb.parts.kernels import SoftmaxKernel
from archdb.plan.layout import BuildError
from archdb.schema import BlockSparse, LayerKind
from tests.conftest import BLOCK_SPARSE, make_arch, shipped_catalogue

BlockSparseKernel = kernels_part.modules().BlockSparseKernel
GlobalKernel = kernels_part.modules().GlobalKernel
Act = mlp_part.modules().Act
readable = blocksparse_part.modules().readable

PHI3_SMALL = shipped_catalogue().get("phi-3-small")
BLOCKSPARSE_ARCH = {"attention.layer_pattern": ["blocksparse", "global"]}


def reference_mask(
    block_size: int, local: int, stride: int, heads: int, shifted: bool, t: int
) -> list[list[list[bool]]]:
    """The rule, one key at a time: causal, and in the local blocks or a vertical block."""
    step = max(1, int(stride / heads)) if shifted else 0
    return [
        [
            [
                j <= i
                and (
                    i // block_size - j // block_size < local
                    or (j // block_size + h * step + 1) % stride == 0
                )
                for j in range(t)
            ]
            for i in range(t)
        ]
        for h in range(heads)
    ]


def layout_of(block_size: int, local: int, stride: int, heads: int, shifted: bool):
    card = BlockSparse(
        block_size=block_size, local_blocks=local, vertical_stride=stride, head_shifted=shifted
    )
    return BlockSparseLayout.of(card, heads)


LAYOUTS = [  # (block_size, local_blocks, vertical_stride, heads, shifted)
    (2, 2, 3, 4, True),
    (2, 2, 3, 4, False),
    (3, 1, 4, 2, True),
    (1, 4, 8, 8, True),  # one-token blocks, a stride of 8 over 8 heads (Phi-3-small's toy)
    (4, 3, 2, 6, True),  # more heads than the stride: a shift of one block per head
]


# --- the layout ------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", LAYOUTS)
def test_the_mask_is_the_rule_and_causal(sizes):
    t = 29
    layout = layout_of(*sizes)
    mask = readable(layout, t)
    assert mask.tolist() == reference_mask(*sizes, t)
    assert not mask.triu(1).any()  # no head reads a later key
    assert mask.diagonal(dim1=-2, dim2=-1).all()  # every query reads itself


@pytest.mark.parametrize("sizes", LAYOUTS)
def test_closed_form_counts_equal_the_mask(sizes):
    layout, heads = layout_of(*sizes), sizes[3]
    for t in (1, 7, 29, 64):
        mask = torch.tensor(reference_mask(*sizes, t))
        assert layout.useful_keys(t) == int(mask.sum())
        assert layout.newest_keys(t) == int(mask[:, -1].sum())
        assert layout.mean_keys(t) == pytest.approx(float(mask.sum()) / (heads * t))
        for h in range(heads):
            assert [layout.keys_read(i, h) for i in range(t)] == mask[h].sum(-1).tolist()


def test_phi3_small_layout_by_hand():
    """The last query of an 8,192-token sequence (block 127): a local band of 16 blocks
    (1,024 keys) and 14 of the 112 blocks before it, head 0 the blocks 7, 15, ..., 111,
    head 7 the blocks 0, 8, ..., 104: 1,920 keys of 8,192."""
    att = PHI3_SMALL.architecture.attention
    layout = BlockSparseLayout.of(att.block_sparse, att.n_heads)
    assert layout.head_shifts == tuple(h % 8 for h in range(32))
    assert [layout.keys_read(8191, h) for h in (0, 7, 31)] == [1920, 1920, 1920]
    assert layout.keys_read(1023, 5) == 1024  # the band covers the first 16 blocks
    assert layout.keys_read(1024, 0) == 1 + 15 * 64  # block 16: block 0 left the band, unread
    assert layout.keys_read(1024, 7) == 1 + 16 * 64  # ... but head 7 reads block 0
    # the heads' shifts cover every residue: each far block is read by some head
    far = readable(layout_of(64, 16, 8, 32, True), 4096)[:, -1, : 4096 - 16 * 64]
    assert far.any(dim=0).all()


def test_unshifted_heads_read_the_same_keys():
    mask = readable(layout_of(2, 2, 3, 4, False), 24)
    assert all(torch.equal(mask[0], mask[h]) for h in range(4))


# --- the kernel: the keys it reads -----------------------------------------------------------


@pytest.mark.parametrize("sizes", LAYOUTS[:3])
def test_the_kernel_reads_exactly_the_layout(sizes):
    """The gradient of one query's output reaches the values of exactly the keys the layout
    lets that head read, and no other."""
    t, heads, dim = 17, sizes[3], 8
    layout = layout_of(*sizes)
    spec = SoftmaxKernel(LayerKind.BLOCKSPARSE, dim, True, None, None, blocks=layout)
    kernel = spec.module()
    assert isinstance(kernel, BlockSparseKernel)
    torch.manual_seed(0)
    q, k = torch.randn(1, heads, t, dim), torch.randn(1, heads, t, dim)
    v = torch.randn(1, heads, t, dim, requires_grad=True)
    expected = reference_mask(*sizes, t)
    for h in range(heads):
        for i in range(t):
            (grad,) = torch.autograd.grad(kernel(q, k, v)[0, h, i].sum(), v)
            reached = grad[0].abs().sum(-1) > 0  # (heads, keys)
            assert reached[h].tolist() == expected[h][i], (h, i)
            assert not reached[[g for g in range(heads) if g != h]].any()


def test_the_kernel_is_global_attention_under_the_mask():
    t, heads, dim = 20, 4, 8
    layout = layout_of(2, 2, 3, heads, True)
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, heads, t, dim) for _ in range(3))
    sparse = SoftmaxKernel(LayerKind.BLOCKSPARSE, dim, True, None, None, blocks=layout).module()
    dense = SoftmaxKernel(LayerKind.GLOBAL, dim, True, None, None).module()
    mask = readable(layout, t)
    assert torch.allclose(sparse(q, k, v), dense(q, k, v, selected=mask))
    # a local band as wide as the sequence and no far blocks: dense causal attention
    wide = layout_of(2, 10, 3, heads, True)
    whole = SoftmaxKernel(LayerKind.BLOCKSPARSE, dim, True, None, None, blocks=wide).module()
    assert torch.allclose(whole(q, k, v), dense(q, k, v), atol=1e-6)


# --- counts: parameters, FLOPs, cache, decode ------------------------------------------------


def test_block_sparse_layers_add_no_parameters():
    sparse = make_arch(**BLOCKSPARSE_ARCH, **{"attention.block_sparse": BLOCK_SPARSE})
    dense = make_arch()
    model = build_model(sparse)
    assert param_count(sparse).total == param_count(dense).total
    assert sum(p.numel() for p in model.parameters()) == param_count(sparse).total


def test_flops_follow_the_layout():
    """fvcore's count of the built toy equals the formula (the kernel computes every score,
    masked ones included), and the useful attention FLOPs of the block-sparse layer are its
    layout's keys times 2 (d_qk + d_v), where a dense layer's are the causal triangle's."""
    t, heads, dim = 20, 4, 16
    sparse = make_arch(**BLOCKSPARSE_ARCH, **{"attention.block_sparse": BLOCK_SPARSE})
    dense = make_arch(**{"attention.layer_pattern": ["global"]})
    assert measure_flops(build_model(sparse), t).total == sum(flops(sparse, t).dense.values())
    assert flops(sparse, t).dense == flops(dense, t).dense
    read = int(torch.tensor(reference_mask(2, 2, 3, heads, True, t)).sum())
    causal = heads * t * (t + 1) // 2
    per_score = 2 * (dim + dim)
    saved = flops(dense, t).causal["attention"] - flops(sparse, t).causal["attention"]
    assert saved == (causal - read) * per_score
    assert read < causal


def test_cache_and_decode():
    """Every key is cached; one new token reads its layout's keys of the cache."""
    layout = layout_of(2, 2, 3, 4, True)
    kernel = SoftmaxKernel(LayerKind.BLOCKSPARSE, 16, True, None, None, blocks=layout)
    attn = HeadAttention(64, 4, 2, 16, False, False, kernel)
    context = 23
    mask = torch.tensor(reference_mask(2, 2, 3, 4, True, context))
    assert attn.cache_entries(context) == 2 * (16 + 16) * context
    assert attn.decode_flops(context) == 2 * (16 + 16) * int(mask[:, -1].sum())
    assert kernel.mean_keys(context) == pytest.approx(float(mask.sum()) / (4 * context))


# --- the card ---------------------------------------------------------------------------------


def test_phi3_small_exact_count_from_its_module_shapes():
    """The released modules (vLLM's Phi3Small, mergekit's tensor list): fused
    query_key_value and dense, up_proj (both branches) and down_proj, all with biases; two
    LayerNorms with bias per layer and a final one; the head tied to the embeddings."""
    arch = PHI3_SMALL.architecture
    d, vocab, layers, ff = 4096, 100352, 32, 14336
    qkv = (32 + 2 * 8) * 128
    layer = (d * qkv + qkv) + (d * d + d) + (d * 2 * ff + 2 * ff) + (ff * d + d) + 2 * 2 * d
    expected = vocab * d + layers * layer + 2 * d
    assert expected == 7_392_272_384
    assert param_count(arch).total == expected
    assert full_size_params(arch).total == expected


def test_phi3_small_card_values():
    arch = PHI3_SMALL.architecture
    att = arch.attention
    assert att.layer_pattern == [LayerKind.BLOCKSPARSE, LayerKind.GLOBAL]
    assert arch.layer_kind_counts() == {LayerKind.BLOCKSPARSE: 16, LayerKind.GLOBAL: 16}
    assert (att.block_sparse.block_size, att.block_sparse.local_blocks) == (64, 16)
    assert (att.block_sparse.vertical_stride, att.block_sparse.head_shifted) == (8, True)
    assert att.scale == 1 / 128 and arch.embedding_multiplier == 10.0
    assert arch.logit_scale == 1 / 8
    assert arch.mlp.activation is Activation.GEGELU and arch.mlp.gegelu_limit == 20.0


def test_phi3_small_toy_runs_causally_with_its_kernels():
    toy = shrink(PHI3_SMALL.architecture)
    blocks = toy.arch.attention.block_sparse
    # the local band is the toy window (16 tokens): one-token blocks, stride and band kept
    assert (blocks.block_size, blocks.local_blocks, blocks.vertical_stride) == (1, 16, 8)
    torch.manual_seed(0)
    model = build_model(toy.arch).eval()
    kernels = [m for m in model.modules() if isinstance(m, GlobalKernel)]
    assert [type(m) is BlockSparseKernel for m in kernels] == [True, False]
    tokens = torch.randint(0, toy.arch.vocab_size, (1, toy.arch.context_length))
    changed = tokens.clone()
    changed[0, -1] = (changed[0, -1] + 1) % toy.arch.vocab_size
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert a.shape == (1, 64, 256) and torch.isfinite(a).all()
    assert torch.equal(a[:, :-1], b[:, :-1]) and not torch.equal(a[:, -1], b[:, -1])
    assert measure_flops(model, 64).total == sum(flops(toy.arch, 64).dense.values())


# --- gegelu -----------------------------------------------------------------------------------


def test_gegelu_is_phi3_small_s_clamped_quick_gelu_unit():
    """quick_gelu(min(gate, limit)) * (clamp(up, -limit, limit) + 1)."""
    model = build_model(make_arch(**{"mlp.activation": "gegelu", "mlp.gegelu_limit": 2.0}))
    act = next(m for m in model.modules() if isinstance(m, Act))
    gate = torch.tensor([-3.0, -0.5, 0.0, 1.0, 2.5, 30.0])
    up = torch.tensor([-5.0, -1.0, 0.5, 1.5, 2.0, 3.0])
    g = gate.clamp(max=2.0)
    expected = g * torch.sigmoid(1.702 * g) * (up.clamp(-2.0, 2.0) + 1)
    assert torch.allclose(act(gate, up), expected)
    default = build_model(make_arch(**{"mlp.activation": "gegelu"}))
    default_act = next(m for m in default.modules() if isinstance(m, Act))
    assert default_act.rule.combine.limit == 20.0  # Phi3SmallConfig's gegelu_limit
    assert Activation.GEGELU.gated


def test_gegelu_limit_is_for_gegelu_only():
    with pytest.raises(ValidationError, match="gegelu_limit is for gegelu only"):
        make_arch(**{"mlp.gegelu_limit": 2.0})


# --- where the schema and the builder refuse it ----------------------------------------------


def test_block_sparse_layout_goes_with_blocksparse_layers():
    with pytest.raises(ValidationError, match="required for, and only for"):
        make_arch(**BLOCKSPARSE_ARCH)
    with pytest.raises(ValidationError, match="required for, and only for"):
        make_arch(**{"attention.block_sparse": BLOCK_SPARSE})


def test_blocksparse_is_not_built_with_a_position_bias():
    arch = make_arch(
        **BLOCKSPARSE_ARCH,
        **{
            "attention.block_sparse": BLOCK_SPARSE,
            "position.type": "alibi",
            "position.rope_theta": None,
        },
    )
    with pytest.raises(BuildError, match="blocksparse layers outside a decoder-only model"):
        build_model(arch)


def test_counts_are_closed_form_at_any_context():
    """The crossover bisects up to the schema's largest context: the counts are O(heads)
    there, and equal the per-query sum at Phi-3-small's own 8,192 tokens."""
    att = PHI3_SMALL.architecture.attention
    layout = BlockSparseLayout.of(att.block_sparse, att.n_heads)
    t = 8192 + 37  # a partial last block too
    by_query = sum(layout.keys_read(i, h) for h in range(att.n_heads) for i in range(t))
    assert layout.useful_keys(t) == by_query
    assert 0 < layout.mean_keys(1e12) < 1e12 / 2
