"""The one error type the CLI turns into a single line and exit status 2."""


class InputError(ValueError):
    """A file or option the user gave cannot be used; the message says which and why.

    A ValueError, so that code catching a bad value (the dashboard's calibration view,
    tests) keeps catching it; only InputError, not every ValueError, is the user's fault."""
