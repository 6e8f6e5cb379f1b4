# man/local.mk - the manual pages: vigil(1) for the command, vigil-rules(5) for the
# rule language. dist_man_MANS installs them under $(mandir)/man1 and man5 and puts
# them in the tarball.
dist_man_MANS = man/vigil.1 man/vigil-rules.5
