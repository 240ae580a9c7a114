"""Test and benchmark support: the transformers-facing half of the family specs.

Nothing in the runtime library imports this package; transformers is a test dependency.
"""
