"""What a scoped caller reaches: moved to placed.operations.scopes. These names stay for
the modules that still import them from here (change_scope.py, simulate.py, being
changed elsewhere); they import the operations' module once those moves land."""

from __future__ import annotations

from placed.operations.scopes import accounts_in, below, domain_of_account, subtree

__all__ = ["accounts_in", "below", "domain_of_account", "subtree"]
