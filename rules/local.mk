libvigil_a_SOURCES += \
	rules/ruleset.c rules/ruleset.h rules/filters.c rules/filters.h
