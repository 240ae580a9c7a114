"""Vocabularies whose values each carry their rule, one module per kind of choice.

A module here holds the enum a card field takes (the schema imports it) beside the registry
of what each value computes (the plan and the builder read it), so adding a value is one
edit in one module: ``norms`` (norm kinds), ``activations`` (MLP activations). Non-attention
token mixers are plugin modules of ``archdb.mixers``. Nothing here imports the schema, nor
torch at import time: the schema, and so every query command, imports these modules.
"""
