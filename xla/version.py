"""The package version (read by the persistent cache's compiler fingerprint)."""
__version__ = "0.1.0"
