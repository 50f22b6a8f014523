"""The errors npbert raises on bad input: each names the problem, so the CLI can print it
as one line instead of a traceback. All subclass ValueError, so `except ValueError` works."""


class NpbertError(ValueError):
    """Base class: a problem with what the user gave npbert (not a bug in npbert)."""


class InputError(NpbertError):
    """Model inputs that do not fit the model: out-of-range ids, shapes that disagree."""


class CheckpointError(NpbertError):
    """A checkpoint that is missing, corrupt, or does not match its config."""


class DataError(NpbertError):
    """A corpus, vocabulary or task file that cannot be used as it is."""


# What json.load / json.loads raise on a bad file: ValueError (not UTF-8, not JSON, an integer of
# more than 4300 digits) and RecursionError (nested too deep). Readers catch both to raise one of
# the errors above.
JSON_ERRORS = (ValueError, RecursionError)
