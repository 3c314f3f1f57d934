"""``palaestrai.agent.util``: helpers for Brains and Muscles."""
