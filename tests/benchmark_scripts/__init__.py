"""The scripts in benchmarks/ whose output the docs quote, run small: ablations, cold start, eval speed,
the default run's seeds, the hour recipe, the linguistic results."""
