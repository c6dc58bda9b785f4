// Connects at its first instruction: one TCP connection to ADDRESS PORT (the last two
// arguments, so that it also serves as a script's interpreter), and prints the line the
// server answers (reporter.py: the source address it saw), or "failed". Built static by the
// exec-rule tests, so that nothing runs before main: the connection is as early as a
// program can make one.
// usage: connectnow ADDRESS PORT
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *address = argv[argc - 2];
    int port = atoi(argv[argc - 1]);
    struct sockaddr_in6 six = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
    struct sockaddr_in four = { .sin_family = AF_INET, .sin_port = htons(port) };
    int v6 = strchr(address, ':') != NULL;
    if (v6 ? inet_pton(AF_INET6, address, &six.sin6_addr) != 1 : inet_pton(AF_INET, address, &four.sin_addr) != 1) return 2;
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    char line[128];
    ssize_t n = -1;
    if (fd >= 0 && connect(fd, v6 ? (struct sockaddr *)&six : (struct sockaddr *)&four, v6 ? sizeof six : sizeof four) == 0)
        n = read(fd, line, sizeof line - 1);
    if (n <= 0) {
        write(1, "failed\n", 7);
        return 1;
    }
    write(1, line, n);
    return 0;
}
