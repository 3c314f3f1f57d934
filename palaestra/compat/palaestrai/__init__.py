"""``palaestrai`` inside palaestra's processes: palaestrAI's public plug-in API.

Mapped by :mod:`palaestra.compat.finder`; see docs/coming-from-palaestrai.md. The
subpackages are imported on first use, as palaestrAI's are.
"""
