"""Rules about the repository itself: the package's import layers, the tests' own layout, and no
test waiting on the clock."""
