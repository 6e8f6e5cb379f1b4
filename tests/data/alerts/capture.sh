#!/bin/sh
# Test helper for exec outputs: records one delivery (its argv, one per line, then its
# stdin) into a new file in the folder given as $1. Written to a temporary name and
# renamed, so a reader never sees half a record.
dir=$1
shift
f="$dir/capture.$$"
{
    printf 'argc=%d\n' "$#"
    for a in "$@"; do
        printf 'arg=%s\n' "$a"
    done
    cat
} >"$f.tmp" && mv "$f.tmp" "$f.out"
