"""archdb.measure."""
