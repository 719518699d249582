"""placed serve: the HTTP front end. Handlers are thin (parse -> call one engine function ->
serialize), so the service and the CLI print the same documents."""

from placed.service.app import create_app

__all__ = ["create_app"]
