"""The course: the demos, the walkthrough, the exercises and their notebooks, docs/overview.md, the
figures the pages quote from recorded runs, and what a newcomer is told."""
