libvigil_a_SOURCES += \
	alerts/alerts.h
