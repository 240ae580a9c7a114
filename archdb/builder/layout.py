"""Moved to ``archdb.plan.layout``; these names stay importable from here."""

from archdb.plan.layout import (  # noqa: F401
    BuildError,
    check_buildable,
    embedding_width,
    fill_unknowns,
    is_moe_layer,
    lcm,
    learned_rows,
    rotary_dims,
)
