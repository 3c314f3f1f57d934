"""The wire: the messages palaestra's processes exchange (one module per protocol), the
direct links of the per-step path, the network of a run across hosts, and the rows on their
way to the store."""
