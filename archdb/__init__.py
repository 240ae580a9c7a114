"""archdb: an architecture survey database and model-card analysis tool for LMs."""

__version__ = "0.1.0"
