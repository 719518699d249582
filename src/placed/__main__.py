"""`python -m placed`: the same command as `placed`."""

from placed.cli.main import run

if __name__ == "__main__":
    run()
