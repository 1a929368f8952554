"""The one exception type the workbench raises for bad input; CLIs turn it into a message + exit 2."""


class WorkbenchError(Exception):
    """A problem the user can fix (bad file, bad config, server down); the message says what and where."""
