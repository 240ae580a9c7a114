"""archdb.reports."""
