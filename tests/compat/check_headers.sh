#!/bin/sh
# check_headers.sh INCLUDE_DIR COMPAT_DIR - every public header compiles alone (and twice)
# as C11 with -Wall -Wextra -Werror -pedantic-errors and as C++14 with -Wall -Wextra
# -Werror, and also as C99 and C++11 (CANN samples build with either); abi_check.c (enum
# values, layouts, signatures) compiles as C11 and C++14.
set -u
INC=$1
DIR=$2
CC=${CC:-gcc}
CXX=${CXX:-g++}
fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
for h in "$INC"/hccl/*.h "$INC"/acl/*.h; do
    rel=${h#"$INC"/}
    printf '#include <%s>\n#include <%s>\nint header_check_dummy;\n' "$rel" "$rel" >"$tmp/t.c"
    cp "$tmp/t.c" "$tmp/t.cc"
    if ! $CC -std=c11 -Wall -Wextra -Werror -pedantic-errors -fsyntax-only -I"$INC" "$tmp/t.c" 2>"$tmp/err"; then
        echo "FAIL: $rel alone does not compile as C11 (gcc -std=c11 -Wall -Wextra -Werror -pedantic-errors):"
        cat "$tmp/err"
        fail=1
    fi
    if ! $CXX -std=c++14 -Wall -Wextra -Werror -fsyntax-only -I"$INC" "$tmp/t.cc" 2>"$tmp/err"; then
        echo "FAIL: $rel alone does not compile as C++14 (g++ -std=c++14 -Wall -Wextra -Werror):"
        cat "$tmp/err"
        fail=1
    fi
    if ! $CC -std=c99 -Wall -Wextra -Werror -pedantic-errors -fsyntax-only -I"$INC" "$tmp/t.c" 2>"$tmp/err"; then
        echo "FAIL: $rel alone does not compile as C99 (gcc -std=c99 -Wall -Wextra -Werror -pedantic-errors):"
        cat "$tmp/err"
        fail=1
    fi
    if ! $CXX -std=c++11 -Wall -Wextra -Werror -fsyntax-only -I"$INC" "$tmp/t.cc" 2>"$tmp/err"; then
        echo "FAIL: $rel alone does not compile as C++11 (g++ -std=c++11 -Wall -Wextra -Werror):"
        cat "$tmp/err"
        fail=1
    fi
    n=$((n + 1))
done
[ "$n" -ge 8 ] || { echo "FAIL: only $n public headers found under $INC"; fail=1; }
if ! $CC -std=c11 -Wall -Wextra -Werror -pedantic-errors -c -I"$INC" "$DIR/abi_check.c" -o "$tmp/abi_c.o" 2>"$tmp/err"; then
    echo "FAIL: abi_check.c (C11):"; cat "$tmp/err"; fail=1
fi
cp "$DIR/abi_check.c" "$tmp/abi_check.cc"
if ! $CXX -std=c++14 -Wall -Wextra -Werror -c -I"$INC" "$tmp/abi_check.cc" -o "$tmp/abi_cc.o" 2>"$tmp/err"; then
    echo "FAIL: abi_check.c (C++14):"; cat "$tmp/err"; fail=1
fi
# C and C++ must see the same (unmangled) names
if [ $fail -eq 0 ] && ! nm "$tmp/abi_cc.o" | grep -q ' U HcclAllReduce$'; then
    echo "FAIL: from C++, HcclAllReduce is not referenced with C linkage"; fail=1
fi
[ $fail -eq 0 ] && echo "PASS: $n headers compile alone as C99, C11, C++11 and C++14; ABI checks hold"
exit $fail
