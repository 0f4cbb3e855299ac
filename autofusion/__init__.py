"""autofusion: an open graph auto-fusion compiler built on xDSL."""

__version__ = "0.1.0"
