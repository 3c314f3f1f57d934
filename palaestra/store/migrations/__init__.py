"""The store's alembic script directory: ``env.py``, the revision template and ``versions/``.

A package so that it ships with palaestra; :mod:`palaestra.store.schema` runs it.
"""
