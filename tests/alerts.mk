# tests: alerts (see tests/local.mk)
