// ConcordFaultInjection: an LD_PRELOAD library for the crash and error enumeration
// (Tests/ConcordStoreTests/CrashEnumerationTests.swift, SyncEnumerationTests.swift).
//
// It counts a process's I/O calls — write, pwrite64 (and pwrite), fsync, fdatasync, rename,
// renameat (and renameat2), unlink, unlinkat — across all its threads, and fails exactly one
// of them: the Nth call of one kind in the whole process. strace's fault injection counts
// per thread, so in a process that does its I/O on several threads (an async sync, with
// transfers in flight at once) "the Nth write" would be the Nth of every thread.
//
// Environment:
//   CONCORD_FAULT=CALL:N:ACTION   the Nth CALL (one of the names above, pwrite64 for both
//                                 pwrites, renameat for both renameats) gets ACTION: `kill`
//                                 (SIGKILL, before the call), or an errno name, `ENOSPC` or
//                                 `EIO` (the call returns -1 with that errno, doing nothing)
//   CONCORD_FAULT_COUNTS=FILE     at exit, writes "CALL COUNT" lines to FILE
//
// Writes through writev are neither counted nor failed (the crash child logs that way).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

enum Call { WRITE, PWRITE64, FSYNC, FDATASYNC, RENAME, RENAMEAT, UNLINK, UNLINKAT, CALLS };
static const char *const names[CALLS] = {
    "write", "pwrite64", "fsync", "fdatasync", "rename", "renameat", "unlink", "unlinkat",
};

static _Atomic long counts[CALLS];
static int target = -1;
static long at = 0;
static int action = 0;  // -1: kill; otherwise the errno to return

__attribute__((constructor)) static void configure(void) {
    const char *spec = getenv("CONCORD_FAULT");
    if (spec == NULL) return;
    char call[32] = {0};
    char what[32] = {0};
    long n = 0;
    if (sscanf(spec, "%31[a-z0-9]:%ld:%31[A-Za-z]", call, &n, what) != 3 || n < 1) {
        fprintf(stderr, "ConcordFaultInjection: CONCORD_FAULT must be CALL:N:ACTION, not %s\n", spec);
        _exit(97);
    }
    for (int index = 0; index < CALLS; index++) {
        if (strcmp(call, names[index]) == 0) target = index;
    }
    if (strcmp(what, "kill") == 0) action = -1;
    else if (strcmp(what, "ENOSPC") == 0) action = ENOSPC;
    else if (strcmp(what, "EIO") == 0) action = EIO;
    if (target < 0 || action == 0) {
        fprintf(stderr, "ConcordFaultInjection: unknown call or action in %s\n", spec);
        _exit(97);
    }
    at = n;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("CONCORD_FAULT_COUNTS");
    if (path == NULL) return;
    FILE *file = fopen(path, "w");
    if (file == NULL) return;
    for (int index = 0; index < CALLS; index++) fprintf(file, "%s %ld\n", names[index], atomic_load(&counts[index]));
    fclose(file);
}

// Counts the call; true when it must fail (errno set). Kills the process when asked to.
static int fails(enum Call call) {
    long n = atomic_fetch_add(&counts[call], 1) + 1;
    if ((int)call != target || n != at) return 0;
    if (action < 0) {
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
    errno = action;
    return 1;
}

#define REAL(name) \
    static __typeof__(name) *real; \
    if (real == NULL) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t write(int fd, const void *bytes, size_t count) {
    REAL(write);
    return fails(WRITE) ? -1 : real(fd, bytes, count);
}

ssize_t pwrite64(int fd, const void *bytes, size_t count, off64_t offset) {
    REAL(pwrite64);
    return fails(PWRITE64) ? -1 : real(fd, bytes, count, offset);
}

ssize_t pwrite(int fd, const void *bytes, size_t count, off_t offset) {
    REAL(pwrite);
    return fails(PWRITE64) ? -1 : real(fd, bytes, count, offset);
}

int fsync(int fd) {
    REAL(fsync);
    return fails(FSYNC) ? -1 : real(fd);
}

int fdatasync(int fd) {
    REAL(fdatasync);
    return fails(FDATASYNC) ? -1 : real(fd);
}

int rename(const char *from, const char *to) {
    REAL(rename);
    return fails(RENAME) ? -1 : real(from, to);
}

int renameat(int fromFolder, const char *from, int toFolder, const char *to) {
    REAL(renameat);
    return fails(RENAMEAT) ? -1 : real(fromFolder, from, toFolder, to);
}

int renameat2(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags) {
    REAL(renameat2);
    return fails(RENAMEAT) ? -1 : real(fromFolder, from, toFolder, to, flags);
}

int unlink(const char *path) {
    REAL(unlink);
    return fails(UNLINK) ? -1 : real(path);
}

int unlinkat(int folder, const char *path, int flags) {
    REAL(unlinkat);
    return fails(UNLINKAT) ? -1 : real(folder, path, flags);
}
