"""A plug-in module that cannot be imported: run files naming it must be refused (exit 2)."""

raise ImportError("needs the frobnicator")
