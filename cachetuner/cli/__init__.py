"""Command-line interface (typer). One module per command group; ``main.py`` wires them."""
