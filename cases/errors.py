"""The one error type of the cases package."""


class CaseError(RuntimeError):
    """A case that cannot be made: the message names the step, the file or log, and the fix."""
