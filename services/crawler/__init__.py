"""The crawler: frontier, robots, politeness, fetching, parsing and the committer."""
