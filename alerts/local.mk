libvigil_a_SOURCES += \
	alerts/alerts.h alerts/alerts.c \
	alerts/render.h alerts/render.c \
	alerts/outputs.h alerts/out_common.c \
	alerts/out_fd.c \
	alerts/out_exec.c \
	alerts/out_net.c
