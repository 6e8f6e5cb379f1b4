libvigil_a_SOURCES += \
	rules/ruleset.c rules/ruleset.h
