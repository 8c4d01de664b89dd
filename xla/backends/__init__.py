"""Backends: each folder holds one target's compiler and executable."""
