"""The placement engine: a columnar index, one pipeline, a selector, a planner."""
