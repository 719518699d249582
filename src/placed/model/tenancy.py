"""Tenancy (seed 004): a tree of domains under ROOT, accounts each in exactly one domain,
and the principals who act (a root admin, the admin of one domain, a user of one account).

A child domain may use what is dedicated to its parent, never the reverse: the domains
that can use a domain's resources are its subtree, and the domains whose resources an
account can use are its domain's chain up to ROOT.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

ROOT = "ROOT"

Role = Literal["root-admin", "domain-admin", "user"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who acts: a root admin, the admin of `domain`, or a user of `account`."""

    role: Role
    domain: str | None = None  # a domain admin's domain (a user's: their account's)
    account: str | None = None  # a user's account

    def __str__(self) -> str:
        if self.role == "root-admin":
            return "root-admin"
        if self.role == "domain-admin":
            return f"domain-admin of {self.domain}"
        return f"user of {self.account}"


ROOT_ADMIN = Principal("root-admin", ROOT)


@dataclass(frozen=True, slots=True)
class Tenancy:
    """Domains by name (each with its parent; ROOT has none) and accounts by name (each
    with its domain)."""

    parents: Mapping[str, str | None] = field(default_factory=lambda: {ROOT: None})
    accounts: Mapping[str, str] = field(default_factory=dict)

    def has_domain(self, domain: str) -> bool:
        return domain in self.parents

    def chain(self, domain: str) -> Iterator[str]:
        """The domain, its parent, ... up to ROOT."""
        current: str | None = domain
        while current is not None:
            yield current
            current = self.parents.get(current)

    def within(self, domain: str, ancestor: str) -> bool:
        """Whether `domain` is `ancestor` or below it."""
        return ancestor in self.chain(domain)

    def domain_of(self, account: str) -> str | None:
        return self.accounts.get(account)

    def principal(self, text: str) -> Principal | None:
        """`root-admin`, `domain-admin:D1` or `user:A7` as a principal of this tenancy."""
        if text == "root-admin":
            return ROOT_ADMIN
        role, _, name = text.partition(":")
        if role == "domain-admin" and self.has_domain(name):
            return Principal("domain-admin", name)
        if role == "user" and name in self.accounts:
            return Principal("user", self.accounts[name], name)
        return None
