"""palaestra's version (a module of its own: modules that record it need not import the package,
whose lazy names lead to the Python API)."""

__version__ = "0.1.0"
