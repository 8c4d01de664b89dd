"""xla_vault: an example backend for a device with its own memory (see README.md)."""
