vigil_SOURCES += \
	cli/main.c cli/commands.h \
	cli/cmd_check.c cli/cmd_fmt.c cli/cmd_run.c cli/cmd_test.c cli/cmd_explain.c cli/cmd_ctl.c
# run/test helpers
vigil_SOURCES += \
	cli/json_tree.c cli/json_tree.h \
	cli/rejects.c cli/rejects.h \
	cli/run_state.c cli/run_state.h \
	cli/watch.c cli/watch.h \
	cli/control.c cli/control.h
