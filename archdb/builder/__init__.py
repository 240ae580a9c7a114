"""archdb.builder."""
