libvigil_a_SOURCES += \
	runtime/decode.c runtime/decode.h \
	runtime/evtime.c runtime/evtime.h \
	runtime/input.c runtime/input.h
