"""The store's schema revisions, one module per revision, written by hand."""
