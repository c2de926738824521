#!/bin/sh
# check_symbols.sh LIBHCCL LIBASCENDCL INCLUDE_DIR - libhccl.so exports only Hccl*
# names and libascendcl.so only acl* names (nm -D --defined-only), and every function
# the public headers declare is exported by one of them.
set -u
HCCL=$1
ACL=$2
INC=$3
fail=0
check_prefix() { # lib prefix
    syms=$(nm -D --defined-only "$1" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
    [ -n "$syms" ] || { echo "FAIL: $1 exports nothing"; fail=1; return; }
    bad=$(printf '%s\n' "$syms" | grep -v "^$2" || true)
    if [ -n "$bad" ]; then
        echo "FAIL: $(basename "$1") exports names not starting with $2:"
        printf '    %s\n' $bad
        fail=1
    fi
}
check_prefix "$HCCL" Hccl
check_prefix "$ACL" acl
exported=$( (nm -D --defined-only "$HCCL"; nm -D --defined-only "$ACL") | awk 'NF >= 3 { print $3 }' | sed 's/@.*//')
declared=$(cat "$INC"/hccl/*.h "$INC"/acl/*.h | grep -E '^[[:space:]]*extern ' | grep -oE '\b(Hccl|acl)[A-Za-z0-9_]*\(' |
    tr -d '(' | sort -u)
missing=0
for f in $declared; do
    if ! printf '%s\n' "$exported" | grep -qx "$f"; then
        echo "FAIL: $f is declared in the public headers but not exported"
        missing=$((missing + 1))
        fail=1
    fi
done
[ $fail -eq 0 ] && echo "PASS: exports are Hccl*/acl* only; all $(printf '%s\n' "$declared" | wc -l) declared functions exported"
exit $fail
