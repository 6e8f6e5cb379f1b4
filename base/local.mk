libvigil_a_SOURCES += \
	base/arena.c base/arena.h \
	base/buf.c base/buf.h \
	base/clock.h \
	base/fdio.c base/fdio.h \
	base/freeroom.h \
	base/grow.h \
	base/hash.h \
	base/hostport.c base/hostport.h \
	base/isotime.c base/isotime.h \
	base/lines.h \
	base/memcheck.h \
	base/slab.c base/slab.h \
	base/utf8.h
