"""``palaestrai.util``: the seeding and dynamic loading helpers plug-ins use."""
