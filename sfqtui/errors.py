"""The one error type the CLI turns into a single line and exit status 2."""


class InputError(Exception):
    """A file or option the user gave cannot be used; the message says which and why."""
