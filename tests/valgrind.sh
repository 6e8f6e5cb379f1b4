#!/bin/sh
# tests/valgrind.sh TEST [ARGS...] — the LOG_COMPILER of `make check-valgrind`: a test
# program runs under valgrind's memcheck, which fails it (exit 99) on any memory error or
# a definite or indirect leak; a test script runs as it is (the programs it starts are
# not checked). Check's forked test cases are checked too: memcheck follows fork.
case $(head -c 4 "$1" 2> /dev/null) in
    "$(printf '\177ELF')")
        exec valgrind --quiet --error-exitcode=99 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
            "$@" ;;
esac
exec "$@"
