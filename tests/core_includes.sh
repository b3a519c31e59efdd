#!/bin/sh
# core/ includes nothing of oracle/, harness/, candidates/, toy/ or any
# other module above it: every quoted include of a file in core/ names a
# header in core/ (core/adm_cuda_module.h: the CUDA module's loader knows
# none of the parts it hands out).
core=$1
bad=0
for f in "$core"/*; do
    for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
        if [ ! -e "$core/$h" ]; then
            echo "$f includes \"$h\", which is not core's"
            bad=1
        fi
    done
done
[ $bad = 0 ] && echo "core_includes: every include of core/ is core's"
exit $bad
