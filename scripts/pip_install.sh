# Sourced by scripts/setup.sh and scripts/install_harnesses.sh: one way to run pip install.
#
#   pip_install PYTHON ARGS...      pip install ARGS into PYTHON's environment, quietly, one pip at a time
#
# --no-warn-conflicts: these environments hold conflicts on purpose (openai-whisper without triton; a harness
# venv that sees the workbench venv's packages after its own), which pip reports after a successful install
# as "ERROR: pip's dependency resolver does not currently take into account ..." — a line that reads like a
# failure in a set-up that succeeded. A real failure still stops set-up with pip's own message and status.
pip_install() {
    local python="$1"
    shift
    flock /tmp/pip.lock "$python" -m pip install --quiet --no-warn-conflicts "$@"
}
