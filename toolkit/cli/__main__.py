"""``python -m toolkit.cli``: the ``toolkit`` command without its console script."""

from toolkit.cli import command

if __name__ == "__main__":  # not when a tool imports every module of the package
    command()
