"""transformers families: one spec per ``model_type`` (``registry.SPECS``).

Each lineage module (``llama``, ``gemma``, ``deepseek``, ``ssm``, ...) holds its families'
knowledge once: the specs (``spec.FamilySpec``), each declared as a difference from its
parent, with their fixed choices and config keys (``archdb_hf.keymap.Key``: read by
import-hf, written by the reference), the small hooks for what a key cannot say either
way, and the checkpoint tensor names.

``spec`` defines a family; ``registry`` collects the families and routes a card to its
own; ``card_to_config`` holds the values several writers share (the reference,
``archdb_hf.reference``, writes a card as its family's config and reads it back).
import-hf (``archdb_hf.importer``), the checkpoint names (``archdb_hf.weights``) and the
fidelity levels (``archdb.fidelity``) read the same specs. The registry is imported on
demand: it pulls in the importer and the writers, which the query commands never need.
"""
