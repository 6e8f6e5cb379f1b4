#!/bin/sh
# Test helper for exec outputs: never ends on its own and ignores SIGTERM (so does the
# sleep it starts), so only the SIGKILL to the process group stops it.
trap '' TERM
sleep 60
