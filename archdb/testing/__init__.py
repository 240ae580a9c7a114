"""Test and benchmark support: the transformers-facing half of the family specs.

Nothing in the runtime library imports this package, and the wheel leaves it out
(pyproject's package list): transformers is a test dependency.
"""
