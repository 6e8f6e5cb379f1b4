#!/bin/sh
# bench/to_oracle.sh — vigil alert JSON lines (stdin) to the oracle's line format.
#
# The bench rule files (peer_*.cep, s1_fraud.cep) write the oracle's line as the
# alert message, e.g. "ALERT_A user=u17 trigger_ts=1700000123", from the matched
# events' own fields, so the conversion is just taking the "message" string. The
# messages contain no quote or backslash, which keeps this a one-line sed.
exec sed -n 's/.*"message":"\([^"\\]*\)".*/\1/p'
