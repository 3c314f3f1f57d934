"""The run description: the specs a run file becomes, the runtime configuration, limits,
names, seeds, store addresses and how plug-in classes are found and loaded."""
