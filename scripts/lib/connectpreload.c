// A library for LD_PRELOAD that connects before the program it is loaded into runs: its
// constructor makes one TCP connection to $VX_CONNECT_ADDRESS $VX_CONNECT_PORT (IPv4),
// prints the line the server answers (reporter.py: the source address it saw), or
// "failed", and exits. It is what anyone who may start a program can do inside that
// program's process: the exec-rule tests use it to show that a bypass.executables program
// goes direct only for whom may bypass.
// build: gcc -shared -fPIC -o connectpreload.so connectpreload.c
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((constructor)) static void connect_first(void) {
    const char *address = getenv("VX_CONNECT_ADDRESS"), *port = getenv("VX_CONNECT_PORT");
    if (address == NULL || port == NULL) return;
    struct sockaddr_in four = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
    if (inet_pton(AF_INET, address, &four.sin_addr) != 1) _exit(2);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    char line[128];
    ssize_t n = -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&four, sizeof four) == 0) n = read(fd, line, sizeof line - 1);
    if (n <= 0) {
        write(1, "failed\n", 7);
        _exit(1);
    }
    write(1, line, n);
    _exit(0);
}
