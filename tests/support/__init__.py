"""What is not a test, kept out of the test folders (which hold only test_*.py and __init__.py,
tests/structure/test_tests_layout.py). Tests import these as `support.<module>`: pytest puts tests/ on
sys.path (the folder above the test folders' packages).

Imported by the tests: data_packages (where an installed data package lives, or a skip),
error_lines (a failed command's one stderr line), fuzzing (the fuzz targets' budget and verdict),
goldens (the golden files and reports, session fixtures: a plugin named in conftest.py), hostile
(unwritable directories, full disks, background commands), kernel_checks (the kernels'
tolerances), optimizer_spy (what AdamW saw each step), patience (how long a wait is),
pretraining_runs (a small corpus and model for the pretraining tests), random_models (random
checkpoints, plain and fine-tuned), scripts (benchmarks/ and demos/ loaded as modules),
shard_corpus (shards whose every token tells its document), shard_reader_doc (docs/data.md's
reader), toy_head (a new head in one file) and broken_ports (ports with a porting bug put in;
also a script: `python tests/support/broken_ports.py` prints docs/porting.md's tables).

Scripts about the suite, run by hand: matrix.py (the suite under several code paths),
suite_cost.py (README's figures of what the suite costs), races.py (two writers racing for one directory, counted)."""
