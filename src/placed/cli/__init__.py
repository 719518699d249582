"""The `placed` command."""
