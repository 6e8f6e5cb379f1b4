# tests: parser (see tests/local.mk)
