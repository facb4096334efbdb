"""opsloop: an autonomous operations agent for large-model inference deployments."""

__version__ = "0.1.0"
