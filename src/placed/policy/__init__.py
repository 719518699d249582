"""Policy families. Each module contributes filters (masks) and scorers (arrays)."""
