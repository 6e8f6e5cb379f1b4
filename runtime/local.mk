libvigil_a_SOURCES += \
	runtime/decode.c runtime/decode.h \
	runtime/evtime.c runtime/evtime.h
