"""Shared fixtures: a small valid card as YAML text, to mutate one mistake at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

# A complete, valid card; line numbers below are relied on by the bad-card corpus.
VALID_CARD = """\
- id: toy-1b
  name: Toy 1B
  family: toy
  organization: Example Lab
  release_date: 2023-03-01
  open_weights: true
  params_published: 1_000_000_000
  training:
    tokens: 100_000_000_000
    dropout: 0.0
    weight_decay: 0.1
    z_loss: 0.0001
  architecture:
    kind: decoder-only
    d_model: 2048
    n_layers: 16
    vocab_size: 32000
    context_length: 4096
    norm: {type: rmsnorm, position: pre, affine: scale, final: true}
    attention:
      variant: softmax
      n_heads: 16
      n_kv_heads: 4
      head_dim: null
      qk_norm: none
      logit_softcap: null
      sliding_window: null
      layer_pattern: [global]
    position: {type: rope, rope_theta: 10000.0}
    mlp: {activation: swiglu, d_ff: 5632, moe: null}
    bias: {qkv: false, attn_out: false, mlp: false}
    parallel_layers: false
    tied_embeddings: false
    final_logit_softcap: null
  sources:
    - kind: config
      title: config.json
      url: https://example.org/toy-1b/config.json
      locator: config.json
      supports: [architecture]
"""


def card_text(card_id: str = "toy-1b") -> str:
    return VALID_CARD.replace("toy-1b", card_id)


@pytest.fixture
def write_catalogue(tmp_path: Path):
    def write(text: str, name: str = "models.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch) -> Path:
    """Each test gets its own validation cache, so no test sees another's results."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("ARCHDB_CACHE_DIR", str(folder))
    monkeypatch.delenv("ARCHDB_NO_CACHE", raising=False)
    return folder
