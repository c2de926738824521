#!/bin/bash
# install_test.sh CMAKE BUILD_DIR COMPAT_DIR - install the build into a temporary prefix,
# check the CANN-like layout, source set_env.sh, build cann_user.cc the way CANN users
# build (g++ main.cc -I$ASCEND_HOME_PATH/include -L$ASCEND_HOME_PATH/lib64 -lhccl
# -lascendcl -lpthread) and run it with ranks as threads and as processes.
set -u
CMAKE=$1
BUILD=$2
DIR=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hccl_install_XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
P="$tmp/prefix"
fail=0
die() { echo "FAIL: $*"; exit 1; }

"$CMAKE" --install "$BUILD" --prefix "$P" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; die "cmake --install failed"; }
for f in include/hccl/hccl.h include/hccl/hccl_types.h include/hccl/hccl_comm.h include/acl/acl.h include/acl/acl_prof.h \
    lib64/libhccl.so lib64/libascendcl.so set_env.sh; do
    [ -f "$P/$f" ] || { echo "FAIL: the install lacks $f"; fail=1; }
done
for d in bin python; do
    [ -d "$P/$d" ] || { echo "FAIL: the install lacks the directory $d/"; fail=1; }
done
# every header an installed header includes is installed too
for h in "$P"/include/hccl/*.h "$P"/include/acl/*.h; do
    for inc in $(sed -n 's/^#include <\([^>]*\)>.*/\1/p' "$h"); do
        case $inc in hccl/* | acl/*) [ -f "$P/include/$inc" ] || { echo "FAIL: $h includes $inc, not installed"; fail=1; } ;; esac
    done
done

(
    unset ASCEND_HOME_PATH
    export LD_LIBRARY_PATH=
    # shellcheck disable=SC1091
    . "$P/set_env.sh" || die "sourcing set_env.sh failed"
    [ "${ASCEND_HOME_PATH:-}" = "$(cd "$P" && pwd)" ] || die "set_env.sh: ASCEND_HOME_PATH='${ASCEND_HOME_PATH:-}', expected $P"
    case ":$LD_LIBRARY_PATH:" in *":$P/lib64:"*) ;; *) die "set_env.sh: LD_LIBRARY_PATH lacks $P/lib64" ;; esac
    case ":$PATH:" in *":$P/bin:"*) ;; *) die "set_env.sh: PATH lacks $P/bin" ;; esac

    mkdir -p "$tmp/user" && cd "$tmp/user" || exit 1
    cp "$DIR/cann_user.cc" main.cc
    g++ main.cc -I"$ASCEND_HOME_PATH/include" -L"$ASCEND_HOME_PATH/lib64" -lhccl -lascendcl -lpthread ||
        die "the CANN-style build failed"
    for std in c++11 c++14; do
        g++ -std=$std -Wall -Wextra -Werror -fsyntax-only main.cc -I"$ASCEND_HOME_PATH/include" ||
            die "main.cc has warnings against the installed headers (-std=$std)"
    done
    ldd ./a.out | grep -q "$P/lib64/libhccl.so" || { ldd ./a.out; die "a.out does not load the installed libhccl.so"; }
    ldd ./a.out | grep -q "$P/lib64/libascendcl.so" || { ldd ./a.out; die "a.out does not load the installed libascendcl.so"; }
    export HCCL_CONNECT_TIMEOUT=30
    timeout 90 ./a.out threads 4 || die "a.out threads 4 failed (status $?)"
    timeout 90 ./a.out procs 3 || die "a.out procs 3 failed (status $?)"
    timeout 60 ./a.out threads 1 || die "a.out threads 1 failed (status $?)"
) || fail=1
[ $fail -eq 0 ] && echo "PASS: install layout, set_env.sh, CANN-style build and run (threads and processes)"
exit $fail
