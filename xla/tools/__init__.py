"""Library code behind the command-line tools in ``tools/``."""
