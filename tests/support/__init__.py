"""What is not a test, kept out of tests/ itself (which holds only test_*.py and conftest.py,
tests/test_layout.py). Tests import these as `support.<module>`: pytest puts tests/ on sys.path.

Imported by the tests: fuzzing (the fuzz targets' budget and verdict), hostile (unwritable
directories, full disks, background commands), patience (how long a wait is), pretraining_runs
(a small corpus and model for the pretraining tests), scripts (benchmarks/ and demos/ loaded as
modules), shard_reader_doc (docs/data.md's reader), toy_head (a new head in one file) and
broken_ports (ports with a porting bug put in; also a script: `python tests/support/broken_ports.py`
prints docs/porting.md's table of symptoms).

Scripts about the suite, run by hand: matrix.py (the suite under several code paths),
suite_cost.py (README's figures of what the suite costs), races.py (issue 37's races, counted)."""
