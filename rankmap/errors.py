"""The one error type rankmap raises for bad input: its message names the file and the fix."""


class InputError(ValueError):
    """Bad input (case, topology, sizes); the CLI prints it as one line and exits 2."""
