#!/bin/sh
# Entry point of the comparison harness: ours vs Open MPI vs Gloo in one run.
# See bench/README.md; every option is compare.py's (bench/compare.sh --help).
here=$(dirname "$0")
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$here/compare.py" "$@"
