# tests of dsl/ (see tests/local.mk)
