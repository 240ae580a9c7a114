"""archdb's command-line interface, installed as the package ``archdb_cli``."""
