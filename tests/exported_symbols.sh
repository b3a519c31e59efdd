#!/bin/sh
# libadmit.so exports its public API and nothing else. The API is read from
# the installed headers given (never a list kept here): every function or
# variable they declare at file scope. Fails when
#   - the library exports a symbol that is not an adm_ name declared there
#     (an internal leaked: -fvisibility=hidden lost, or ADM_API on an
#     internal header's declaration);
#   - a public declaration lacks ADM_API (the symbol is hidden, and a
#     program outside admit cannot link it);
#   - a public declaration is not exported at all (declared, never built).
set -eu
lib=$1; shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

nm -D --defined-only "$lib" | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$work/exported"

# Declarations start in column 0 (members, parameters and bodies are
# indented); comments are removed first, static inline functions and
# typedefs are not symbols.
perl -0777 -ne '
    s{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g;
    for (split /\n/) {
        next if /^(?:static|typedef|#)/ || /^(?:struct|union|enum)\s+\w+\s*[;{]/;
        if (/^(ADM_API\s+)?(?:extern\s+)?(?:const\s+|unsigned\s+)*\w+[\s*]+(adm_\w+)\s*[(\[;]/) {
            print(($1 ? "api" : "unmarked"), " $2\n");
        }
    }' "$@" >"$work/decls"
awk '$1 == "api" { print $2 }' "$work/decls" | sort -u >"$work/api"
awk '$1 == "unmarked" { print $2 }' "$work/decls" | sort -u >"$work/unmarked"

fail=0
if [ ! -s "$work/api" ]; then
    echo "exported_symbols: no ADM_API declaration found in $*" >&2
    exit 1
fi
if [ -s "$work/unmarked" ]; then
    echo "exported_symbols: public declarations without ADM_API (hidden from programs that use libadmit):" >&2
    sed 's/^/  /' "$work/unmarked" >&2
    fail=1
fi
comm -23 "$work/exported" "$work/api" >"$work/leaked"
if [ -s "$work/leaked" ]; then
    echo "exported_symbols: $(wc -l <"$work/leaked") symbols exported but not declared with ADM_API in an installed header:" >&2
    sed 's/^/  /' "$work/leaked" >&2
    fail=1
fi
comm -13 "$work/exported" "$work/api" >"$work/missing"
if [ -s "$work/missing" ]; then
    echo "exported_symbols: declared with ADM_API but not exported by $lib:" >&2
    sed 's/^/  /' "$work/missing" >&2
    fail=1
fi
echo "exported_symbols: $(wc -l <"$work/exported") exported, $(wc -l <"$work/api") declared public"
exit $fail
