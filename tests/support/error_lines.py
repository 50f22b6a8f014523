"""How the CLI tests read a failed command's error: one stderr line, `npbert COMMAND: error: ...`."""


def one_error_line(capsys, command):
    """The one stderr line of a failed command, checked to be `npbert COMMAND: error: ...`."""
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"npbert {command}: error: "), err
    return err
