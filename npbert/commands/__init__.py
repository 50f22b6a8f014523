"""Sub-commands of the `npbert` CLI; see npbert/cli.py."""
