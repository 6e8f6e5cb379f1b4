/* tests/e2e/ctl_client.c — a minimal client of the `vigil run --control` socket for the
 * end-to-end tests: ctl_client SOCKET COMMAND sends the command line and prints the
 * reply. Exit status 1 if the socket cannot be reached. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ctl_client SOCKET COMMAND\n");
        return 2;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(argv[1]) >= sizeof sa.sun_path)
        return 2;
    strcpy(sa.sun_path, argv[1]);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        perror(argv[1]);
        return 1;
    }
    char line[300];
    int n = snprintf(line, sizeof line, "%s\n", argv[2]);
    if (n < 0 || write(fd, line, (size_t)n) != n)
        return 1;
    char buf[4096];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        fwrite(buf, 1, (size_t)got, stdout);
    close(fd);
    return 0;
}
