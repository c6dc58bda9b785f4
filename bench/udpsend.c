// What one unconnected UDP send costs its sender: N datagrams of 64 bytes, an address on
// each (as wireguard-go and QUIC servers send), 64 per sendmmsg(2), to ADDRESS port 9.
// Prints the sender's CPU time per datagram in ns.
// usage: udpsend ADDRESS N
#define _GNU_SOURCE  // sendmmsg
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: udpsend ADDRESS N\n"); return 2; }
    long n = atol(argv[2]);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(9) };
    if (fd < 0 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) { perror("udpsend"); return 1; }
    char payload[64] = {0};
    struct iovec data = { payload, sizeof payload };
    struct mmsghdr batch[64];
    memset(batch, 0, sizeof batch);
    for (int i = 0; i < 64; i++) {
        batch[i].msg_hdr = (struct msghdr){ .msg_name = &to, .msg_namelen = sizeof to, .msg_iov = &data, .msg_iovlen = 1 };
    }
    struct timespec start, end;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
    for (long sent = 0; sent < n; sent += 64) {
        if (sendmmsg(fd, batch, 64, 0) < 0) { perror("sendmmsg"); return 1; }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &end);
    printf("%.1f\n", ((end.tv_sec - start.tv_sec) * 1e9 + (end.tv_nsec - start.tv_nsec)) / n);
    return 0;
}
