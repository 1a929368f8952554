"""What every package imports: the one record type, the workspace, the stage runner, the config, the
error type, redaction and the command-line convention."""
