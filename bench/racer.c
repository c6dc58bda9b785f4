// Where and when a program's first instruction runs after its exec: started with the
// CLOCK_MONOTONIC time (ns) its parent read just before it forked and exec'd this program,
// it reads the clock at once (its first instruction, as near as C gets), then reads its own
// cgroup until it is in one whose path ends in SUFFIX ("" matches any), and prints
// "FIRST_NS PLACED_NS READS": the nanoseconds from the parent's clock to its first
// instruction and to seeing SUFFIX, and how many reads that took (1: it started there).
// usage: racer START_NS SUFFIX   (built static, so that start-up adds almost nothing)
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

int main(int argc, char **argv) {
    long long first = now_ns();
    if (argc != 3) return 2;
    long long start = atoll(argv[1]);
    const char *suffix = argv[2];
    char buffer[4096];
    for (long reads = 1; reads <= 100000000; reads++) {
        int fd = open("/proc/self/cgroup", O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buffer, sizeof buffer - 1) : -1;
        if (fd >= 0) close(fd);
        if (n <= 0) return 1;
        buffer[n] = 0;
        char *line = strstr(buffer, "0::");
        if (line) {
            char *end = strchr(line, '\n');
            if (end) *end = 0;
            size_t length = strlen(line), tail = strlen(suffix);
            if (length >= tail && strcmp(line + length - tail, suffix) == 0) {
                printf("%lld %lld %ld\n", first - start, now_ns() - start, reads);
                return 0;
            }
        }
    }
    return 1;
}
