libvigil_a_SOURCES += \
	dsl/source.c dsl/source.h \
	dsl/diag.c dsl/diag.h \
	dsl/ast.c dsl/ast.h \
	dsl/lexer.l \
	dsl/parser.y \
	dsl/parse.c dsl/parse.h \
	dsl/scan.c dsl/build_expr.c dsl/build.c \
	dsl/check.c dsl/check.h \
	dsl/load.c dsl/load.h \
	dsl/fmt.c dsl/fmt.h
BUILT_SOURCES += dsl/parser.h
# BUILT_SOURCES orders only `make`, `make all` and `make check`: a lone `make vigil`
# (or any one object) would compile these before bison has written the header.
dsl/parse.$(OBJEXT) dsl/scan.$(OBJEXT) dsl/build.$(OBJEXT) dsl/build_expr.$(OBJEXT) \
	dsl/lexer.$(OBJEXT): dsl/parser.h
