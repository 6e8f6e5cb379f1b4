libvigil_a_SOURCES += \
	runtime/decode.c runtime/decode.h \
	runtime/evtime.c runtime/evtime.h runtime/digits.h \
	runtime/input.c runtime/input.h
# engine (runtime/engine, shard, workers, reorder, partition, deadline)
libvigil_a_SOURCES += \
	runtime/engine.c runtime/engine.h \
	runtime/shard.c runtime/shard.h \
	runtime/route.c runtime/route.h \
	runtime/workers.c runtime/workers.h \
	runtime/reorder.c runtime/reorder.h \
	runtime/partition.c runtime/partition.h \
	runtime/deadline.c runtime/deadline.h \
	runtime/budget.h
# the shard's key hint (which rules hold a key hash)
# checkpoints (vigil run --state)
libvigil_a_SOURCES += runtime/checkpoint.c runtime/checkpoint.h
