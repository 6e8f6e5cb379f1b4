libvigil_a_SOURCES += \
	nfa/value.c nfa/value.h \
	nfa/event.c nfa/event.h \
	nfa/expr.c nfa/expr.h \
	nfa/compile.c nfa/nfa.h nfa/nfa_internal.h \
	nfa/match.c \
	nfa/snapshot.c nfa/snapshot.h \
	nfa/explain.c
EXTRA_DIST += nfa/SEMANTICS.md
