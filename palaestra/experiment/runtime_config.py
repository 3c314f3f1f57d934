"""The runtime configuration, as the executor and the CLI know it: see
:mod:`palaestra.core.description.config` (it lives in ``core`` so that the store reads it the same
way)."""

from __future__ import annotations

from palaestra.core.description.config import DEFAULT_FILE, RuntimeConfig, load_runtime_config

__all__ = ["DEFAULT_FILE", "RuntimeConfig", "load_runtime_config"]
