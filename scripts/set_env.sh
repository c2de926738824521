# Source this file (". PREFIX/set_env.sh"): sets up the environment for programs built
# against this install of the portable HCCL.
_hccl_here="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")" && pwd)"
export ASCEND_HOME_PATH="$_hccl_here"
export PATH="$_hccl_here/bin${PATH:+:$PATH}"
export LD_LIBRARY_PATH="$_hccl_here/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$_hccl_here/python${PYTHONPATH:+:$PYTHONPATH}"
unset _hccl_here
