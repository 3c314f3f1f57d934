"""palaestra: a training ground for autonomous agents."""

__version__ = "0.1.0"
