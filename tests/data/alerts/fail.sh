#!/bin/sh
# Test helper for exec outputs: counts its runs in $1/attempts and fails.
cat >/dev/null
echo x >>"$1/attempts"
exit 1
