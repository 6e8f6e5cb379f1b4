# tests of alerts/ (see tests/local.mk)
