# tests of runtime/ (see tests/local.mk)
