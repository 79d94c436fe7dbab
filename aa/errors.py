"""Domain exceptions. Every message names the cause and, where there is one, the fix."""


class AaError(Exception):
    """Base of every error aa raises on purpose."""


class ConfigError(AaError):
    """A configuration value is invalid; the message names the file, field and what is allowed."""


class ProvenanceError(AaError):
    """An `aa-*` header is malformed (not UTF-8, wrong shape)."""


class DevClusterError(AaError):
    """The local development clusters could not be fetched, started or stopped."""
