"""The `aa` command line: one module per command group, each with a `register` function."""
