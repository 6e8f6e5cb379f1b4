libvigil_a_SOURCES += \
	rules/ruleset.c rules/ruleset.h rules/filters.c rules/filters.h \
	rules/relevance.c rules/relevance.h
