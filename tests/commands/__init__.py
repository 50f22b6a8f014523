"""The command line (npbert/cli.py, npbert/commands): option checks and declarations, what a user may
hand a command, the environment around it, `npbert plot` and `npbert bench`."""
