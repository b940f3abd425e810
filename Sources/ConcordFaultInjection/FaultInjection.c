// ConcordFaultInjection: an LD_PRELOAD library for the crash and error enumeration
// (Tests/ConcordStoreTests/CrashEnumerationTests.swift, SyncEnumerationTests.swift,
// PowerCutTests.swift).
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
//                                 (SIGKILL, before the call), `powercut` (a power cut before
//                                 the call: below), or an errno name, `ENOSPC` or `EIO` (the
//                                 call returns -1 with that errno, doing nothing)
//   CONCORD_FAULT_COUNTS=FILE     at exit, writes "CALL COUNT" lines to FILE
//   CONCORD_POWERCUT_ROOT=DIR     with `powercut`: the folder whose files and folders lose,
//                                 at the cut, what was not durable (required)
//   CONCORD_POWERCUT_LOG=FILE     with `powercut`: appends what the cut undid to FILE
//
// Writes through writev are neither counted nor failed (the crash child logs that way).
//
// A kill is not a power cut: after a SIGKILL the kernel's page cache still holds every
// write, synced or not, so a missing fsync is never seen. `powercut` models the disk
// instead (as ALICE, CrashMonkey and Jepsen's LazyFS do): from the start of the process it
// tracks, for the regular files and folders below CONCORD_POWERCUT_ROOT,
//   - per file (device and inode), what was written since its last fsync or fdatasync:
//     before each write, pwrite or ftruncate (and an open with O_TRUNC) the bytes it
//     overwrites within the file's durable size are saved, and the durable size is the
//     size at the last sync (fdatasync counts as fsync, size included, as on ext4);
//   - per folder, the entries changed since its last fsync: a file created (open with
//     O_CREAT, creat, mkstemp), a folder made or removed, a file renamed in or removed. A
//     removed or replaced file is first hard-linked into a hidden shadow folder
//     (ROOT/.concord-powercut-PID) so it can come back. A rename counts as durable once the
//     folder it moved into is fsynced (the rename is one journal entry, as on ext4); the
//     others once the folder they changed is.
// At the cut (the Nth call of the kind given, before it runs) it undoes everything not
// durable: the folder changes in reverse order (a file created in a folder never fsynced
// since disappears, a folder made so disappears with all it holds, a rename is moved back
// and the file it replaced returns, a removed file returns), then every file still reachable
// below the root gets its saved bytes back and its durable size; then it removes the shadow
// folder and kills the process with SIGKILL. Every tracked call holds one lock around its
// bookkeeping and the call itself, so a cut on one thread sees each call of the others
// done or not done, never half.
//
// Limits: what is not durable is lost whole (no torn sector, no reordering of the writes
// to one file and no partial persistence — a subset of what ALICE explores); writes through
// writev, pwritev, mmap, stdio (fopen) or a descriptor copied with fcntl are not seen; files
// mapped shared (SQLite's -shm index, which it rebuilds) are left as they are; link,
// symlink, truncate by path, sync and syncfs are not modelled; a rename from outside the
// root into it counts as a creation, one out of it is not tracked.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum Call { WRITE, PWRITE64, FSYNC, FDATASYNC, RENAME, RENAMEAT, UNLINK, UNLINKAT, CALLS };
static const char *const names[CALLS] = {
    "write", "pwrite64", "fsync", "fdatasync", "rename", "renameat", "unlink", "unlinkat",
};

enum { KILL = -1, POWERCUT = -2 };

static _Atomic long counts[CALLS];
static int target = -1;
static long at = 0;
static int action = 0;  // KILL, POWERCUT, or the errno to return

// MARK: Real functions

#define REAL(name) \
    static __typeof__(name) *real; \
    if (real == NULL) real = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

// The real calls the power-cut bookkeeping makes itself (never counted, never tracked).
static struct {
    int (*open)(const char *, int, ...);
    int (*close)(int);
    ssize_t (*pwrite)(int, const void *, size_t, off_t);
    int (*ftruncate)(int, off_t);
    int (*rename)(const char *, const char *);
    int (*unlink)(const char *);
    int (*rmdir)(const char *);
    int (*mkdir)(const char *, mode_t);
    int (*link)(const char *, const char *);
    ssize_t (*write)(int, const void *, size_t);
} sys;

static void resolveSystem(void) {
    sys.open = dlsym(RTLD_NEXT, "open64");
    sys.close = dlsym(RTLD_NEXT, "close");
    sys.pwrite = dlsym(RTLD_NEXT, "pwrite64");
    sys.ftruncate = dlsym(RTLD_NEXT, "ftruncate64");
    sys.rename = dlsym(RTLD_NEXT, "rename");
    sys.unlink = dlsym(RTLD_NEXT, "unlink");
    sys.rmdir = dlsym(RTLD_NEXT, "rmdir");
    sys.mkdir = dlsym(RTLD_NEXT, "mkdir");
    sys.link = dlsym(RTLD_NEXT, "link");
    sys.write = dlsym(RTLD_NEXT, "write");
}

// MARK: Power-cut state

static int powercut;                 // tracking is on
static char root[PATH_MAX];          // canonical, no trailing slash
static size_t rootLength;
static char shadow[PATH_MAX - 32];   // ROOT/.concord-powercut-PID
static size_t shadowLength;
static long shadowCount;
static int logDescriptor = -1;
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long ticks;                   // orders folder changes and folder syncs

typedef struct { dev_t dev; ino_t ino; } Key;
static int same(Key a, Key b) { return a.dev == b.dev && a.ino == b.ino; }
static Key keyOf(const struct stat *info) { return (Key){info->st_dev, info->st_ino}; }

// Bytes a write overwrote: restored in reverse order, so the oldest save wins.
typedef struct { off_t offset; size_t length; unsigned char *bytes; } Extent;

// A file written since its last sync (or mapped shared, then left alone).
typedef struct {
    Key key;
    off_t size;  // the durable size
    Extent *extents;
    size_t count, capacity;
    int mapped;
    int restored;
} File;
static File *files;
static size_t fileCount, fileCapacity;

enum OpKind { CREATE, MAKE_FOLDER, REMOVE, REMOVE_FOLDER, MOVE };
static const char *const opNames[] = {"create", "mkdir", "unlink", "rmdir", "rename"};

// One folder change. `folder`: the folder whose fsync makes it durable.
typedef struct {
    enum OpKind kind;
    long seq;
    Key folder;
    Key node;     // the file or folder created or moved
    char *path;   // created, removed or renamed to
    char *from;   // renamed from (NULL: from outside the root)
    char *saved;  // the removed or replaced file, hard-linked into the shadow folder
    mode_t mode;  // a removed folder's
} Op;
static Op *ops;
static size_t opCount, opCapacity;

typedef struct { Key key; long seq; } FolderSync;
static FolderSync *syncs;
static size_t syncCount, syncCapacity;

// Open descriptors of regular files below the root.
typedef struct { int tracked; int readable; Key key; } Descriptor;
#define DESCRIPTORS 65536
static Descriptor *descriptors;

static void *grow(void *array, size_t *capacity, size_t count, size_t size) {
    if (count < *capacity) return array;
    *capacity = *capacity ? *capacity * 2 : 64;
    void *bigger = realloc(array, *capacity * size);
    if (bigger == NULL) {
        fprintf(stderr, "ConcordFaultInjection: out of memory\n");
        _exit(97);
    }
    return bigger;
}

static void note(const char *format, ...) {
    if (logDescriptor < 0) return;
    char line[3 * PATH_MAX];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(line, sizeof line - 1, format, arguments);
    va_end(arguments);
    if (length < 0) return;
    if (length > (int)sizeof line - 2) length = sizeof line - 2;
    line[length++] = '\n';
    sys.write(logDescriptor, line, (size_t)length);
}

// MARK: Paths

// Whether the absolute, canonical `path` lies below the root (and not in the shadow folder).
static int below(const char *path) {
    if (strncmp(path, root, rootLength) != 0 || path[rootLength] != '/') return 0;
    if (strncmp(path, shadow, shadowLength) == 0 && (path[shadowLength] == '/' || path[shadowLength] == 0)) return 0;
    return 1;
}

// `path` (relative to `folder`) made absolute with a canonical parent, in `out`, and the
// parent's key. False if it is not below the root or cannot be resolved.
static int resolve(int folder, const char *path, char *out, Key *parent) {
    if (!powercut || path == NULL || path[0] == 0) return 0;
    char joined[2 * PATH_MAX];
    if (path[0] == '/') {
        if (strlen(path) >= sizeof joined) return 0;
        strcpy(joined, path);
    } else {
        char base[PATH_MAX];
        if (folder == AT_FDCWD) {
            if (getcwd(base, sizeof base) == NULL) return 0;
        } else {
            char link[64];
            snprintf(link, sizeof link, "/proc/self/fd/%d", folder);
            ssize_t length = readlink(link, base, sizeof base - 1);
            if (length <= 0) return 0;
            base[length] = 0;
        }
        if (snprintf(joined, sizeof joined, "%s/%s", base, path) >= (int)sizeof joined) return 0;
    }
    size_t length = strlen(joined);
    while (length > 1 && joined[length - 1] == '/') joined[--length] = 0;
    char *slash = strrchr(joined, '/');
    const char *name = slash + 1;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || name[0] == 0) return 0;
    *slash = 0;
    char canonical[PATH_MAX];
    if (realpath(joined[0] ? joined : "/", canonical) == NULL) return 0;
    if (snprintf(out, PATH_MAX, "%s/%s", strcmp(canonical, "/") == 0 ? "" : canonical, name) >= PATH_MAX) return 0;
    if (!below(out)) return 0;
    struct stat info;
    if (stat(canonical, &info) != 0) return 0;
    *parent = keyOf(&info);
    return 1;
}

static int lookup(const char *path, struct stat *info) { return lstat(path, info) == 0; }

static char *copy(const char *text) {
    char *result = strdup(text);
    if (result == NULL) _exit(97);
    return result;
}

// MARK: Files

static File *findFile(Key key) {
    for (size_t index = 0; index < fileCount; index++) {
        if (same(files[index].key, key)) return &files[index];
    }
    return NULL;
}

static File *addFile(Key key, off_t size) {
    files = grow(files, &fileCapacity, fileCount, sizeof *files);
    File *file = &files[fileCount++];
    *file = (File){.key = key, .size = size};
    return file;
}

static void dropFile(File *file) {
    for (size_t index = 0; index < file->count; index++) free(file->extents[index].bytes);
    free(file->extents);
    *file = files[--fileCount];
}

static void track(int descriptor, int flags) {
    if (descriptor < 0 || descriptor >= DESCRIPTORS) return;
    struct stat info;
    if (fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
        descriptors[descriptor].tracked = 0;
        return;
    }
    descriptors[descriptor] = (Descriptor){1, (flags & O_ACCMODE) != O_WRONLY, keyOf(&info)};
}

static void untrack(int descriptor) {
    if (powercut && descriptor >= 0 && descriptor < DESCRIPTORS) descriptors[descriptor].tracked = 0;
}

// The tracked descriptor's file, checked against the descriptor (a number closed behind the
// library's back and reused is dropped); `info` gets its status.
static int tracked(int descriptor, struct stat *info) {
    if (!powercut || descriptor < 0 || descriptor >= DESCRIPTORS || !descriptors[descriptor].tracked) return 0;
    if (fstat(descriptor, info) != 0 || !same(keyOf(info), descriptors[descriptor].key)) {
        descriptors[descriptor].tracked = 0;
        return 0;
    }
    return 1;
}

// Saves the bytes of [start, end) (end < 0: to the end) within the file's durable size,
// read through `descriptor` (or, if it is write-only, through a new one).
static void preserve(int descriptor, const struct stat *info, off_t start, off_t end) {
    Key key = keyOf(info);
    File *file = findFile(key);
    if (file == NULL) file = addFile(key, info->st_size);
    if (file->mapped) return;
    if (end < 0 || end > file->size) end = file->size;
    if (start >= end) return;
    size_t length = (size_t)(end - start);
    unsigned char *bytes = malloc(length);
    if (bytes == NULL) _exit(97);
    int reader = descriptor;
    if (!descriptors[descriptor].readable) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", descriptor);
        reader = sys.open(link, O_RDONLY | O_CLOEXEC);
    }
    ssize_t got = reader < 0 ? 0 : pread(reader, bytes, length, start);
    if (reader != descriptor && reader >= 0) sys.close(reader);
    if (got <= 0) {
        // Past the current end: a truncation saved those bytes already.
        free(bytes);
        return;
    }
    file->extents = grow(file->extents, &file->capacity, file->count, sizeof *file->extents);
    file->extents[file->count++] = (Extent){start, (size_t)got, bytes};
}

// MARK: Folders

static long record(enum OpKind kind, Key folder, Key node, const char *path, const char *from, const char *saved, mode_t mode) {
    ops = grow(ops, &opCapacity, opCount, sizeof *ops);
    long seq = ++ticks;
    ops[opCount++] = (Op){kind, seq, folder, node, copy(path), from ? copy(from) : NULL, saved ? copy(saved) : NULL, mode};
    return seq;
}

static void synced(Key folder, long seq) {
    for (size_t index = 0; index < syncCount; index++) {
        if (same(syncs[index].key, folder)) {
            if (syncs[index].seq < seq) syncs[index].seq = seq;
            return;
        }
    }
    syncs = grow(syncs, &syncCapacity, syncCount, sizeof *syncs);
    syncs[syncCount++] = (FolderSync){folder, seq};
}

static int durable(const Op *op) {
    for (size_t index = 0; index < syncCount; index++) {
        if (same(syncs[index].key, op->folder)) return syncs[index].seq > op->seq;
    }
    return 0;
}

// Hard-links the file at `path` into the shadow folder; the link's path, or NULL.
static char *keep(const char *path, char *out) {
    snprintf(out, PATH_MAX, "%s/%ld", shadow, ++shadowCount);
    return sys.link(path, out) == 0 ? out : NULL;
}

static int removeEntry(const char *path, const struct stat *info, int type, struct FTW *walk) {
    (void)info;
    (void)walk;
    if (type == FTW_DP) sys.rmdir(path);
    else sys.unlink(path);
    return 0;
}

static void removeTree(const char *path) {
    nftw(path, removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

static int node(const char *path, Key key) {
    struct stat info;
    return lookup(path, &info) && same(keyOf(&info), key);
}

static int missing(const char *path) {
    struct stat info;
    return !lookup(path, &info) && errno == ENOENT;
}

static void undo(const Op *op) {
    switch (op->kind) {
    case CREATE:
        if (node(op->path, op->node)) sys.unlink(op->path);
        break;
    case MAKE_FOLDER:
        if (node(op->path, op->node)) removeTree(op->path);
        break;
    case REMOVE:
        if (op->saved && missing(op->path)) sys.rename(op->saved, op->path);
        break;
    case REMOVE_FOLDER:
        if (missing(op->path)) sys.mkdir(op->path, op->mode & 07777);
        break;
    case MOVE:
        if (node(op->path, op->node)) {
            if (op->from && missing(op->from)) sys.rename(op->path, op->from);
            else sys.unlink(op->path);
        }
        if (op->saved && missing(op->path)) sys.rename(op->saved, op->path);
        break;
    }
    note("undone %s %s%s%s%s", opNames[op->kind], op->path, op->from ? " from " : "", op->from ? op->from : "", op->saved ? " (the file it removed returns)" : "");
}

// MARK: The cut

static int restoreEntry(const char *path, const struct stat *info, int type, struct FTW *walk) {
    (void)walk;
    if (strncmp(path, shadow, shadowLength) == 0 && (path[shadowLength] == '/' || path[shadowLength] == 0)) return FTW_SKIP_SUBTREE;
    if (type != FTW_F || !S_ISREG(info->st_mode)) return FTW_CONTINUE;
    File *file = findFile(keyOf(info));
    if (file == NULL || file->mapped || file->restored) return FTW_CONTINUE;
    file->restored = 1;
    int descriptor = sys.open(path, O_WRONLY | O_CLOEXEC);
    if (descriptor < 0) {
        note("could not restore %s: %s", path, strerror(errno));
        return FTW_CONTINUE;
    }
    for (size_t index = file->count; index-- > 0;) {
        const Extent *extent = &file->extents[index];
        sys.pwrite(descriptor, extent->bytes, extent->length, extent->offset);
    }
    sys.ftruncate(descriptor, file->size);
    sys.close(descriptor);
    note("restored %s: %zu overwritten ranges, %lld bytes (was %lld)", path, file->count, (long long)file->size, (long long)info->st_size);
    return FTW_CONTINUE;
}

__attribute__((noreturn)) static void cut(enum Call call, long n) {
    pthread_mutex_lock(&lock);  // held until the end: no other thread's call runs now
    note("power cut before %s #%ld", names[call], n);
    for (size_t index = opCount; index-- > 0;) {
        if (!durable(&ops[index])) undo(&ops[index]);
    }
    nftw(root, restoreEntry, 16, FTW_PHYS | FTW_ACTIONRETVAL);
    removeTree(shadow);
    note("killed");
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

// MARK: Configuration

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
    if (strcmp(what, "kill") == 0) action = KILL;
    else if (strcmp(what, "powercut") == 0) action = POWERCUT;
    else if (strcmp(what, "ENOSPC") == 0) action = ENOSPC;
    else if (strcmp(what, "EIO") == 0) action = EIO;
    if (target < 0 || action == 0) {
        fprintf(stderr, "ConcordFaultInjection: unknown call or action in %s\n", spec);
        _exit(97);
    }
    at = n;
    if (action != POWERCUT) return;
    resolveSystem();
    const char *folder = getenv("CONCORD_POWERCUT_ROOT");
    if (folder == NULL || realpath(folder, root) == NULL) {
        fprintf(stderr, "ConcordFaultInjection: powercut needs CONCORD_POWERCUT_ROOT, an existing folder (%s)\n", folder ? folder : "unset");
        _exit(97);
    }
    rootLength = strlen(root);
    if (rootLength == 1) rootLength = 0;  // the root folder "/": every path lies below
    snprintf(shadow, sizeof shadow, "%.*s/.concord-powercut-%d", (int)rootLength, root, (int)getpid());
    shadowLength = strlen(shadow);
    if (sys.mkdir(shadow, 0700) != 0) {
        fprintf(stderr, "ConcordFaultInjection: could not create %s: %s\n", shadow, strerror(errno));
        _exit(97);
    }
    descriptors = calloc(DESCRIPTORS, sizeof *descriptors);
    if (descriptors == NULL) _exit(97);
    const char *log = getenv("CONCORD_POWERCUT_LOG");
    if (log != NULL) logDescriptor = sys.open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    powercut = 1;
}

__attribute__((destructor)) static void report(void) {
    if (powercut) {
        pthread_mutex_lock(&lock);
        removeTree(shadow);
        powercut = 0;
        pthread_mutex_unlock(&lock);
    }
    const char *path = getenv("CONCORD_FAULT_COUNTS");
    if (path == NULL) return;
    FILE *file = fopen(path, "w");
    if (file == NULL) return;
    for (int index = 0; index < CALLS; index++) fprintf(file, "%s %ld\n", names[index], atomic_load(&counts[index]));
    fclose(file);
}

// Counts the call; true when it must fail (errno set). Kills the process, or cuts its
// power, when asked to.
static int fails(enum Call call) {
    long n = atomic_fetch_add(&counts[call], 1) + 1;
    if ((int)call != target || n != at) return 0;
    if (action == POWERCUT) cut(call, n);
    if (action == KILL) {
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
    errno = action;
    return 1;
}

// A tracked call's bookkeeping and the call itself run between enter() and leave().
static void enter(void) { pthread_mutex_lock(&lock); }

static void leave(void) {
    int saved = errno;
    pthread_mutex_unlock(&lock);
    errno = saved;
}

// MARK: Writes

// Whether the descriptor may be one of a tracked file (checked again, under the lock).
static int candidate(int descriptor) {
    return powercut && descriptor >= 0 && descriptor < DESCRIPTORS && descriptors[descriptor].tracked;
}

// A write of `count` bytes at `offset` (by `positioned`) or at the descriptor's offset (by
// `plain`), the bytes it overwrites saved first.
static ssize_t writing(int descriptor, const void *bytes, size_t count, off_t offset, ssize_t (*plain)(int, const void *, size_t),
                       ssize_t (*positioned)(int, const void *, size_t, off_t)) {
    if (!candidate(descriptor)) return plain ? plain(descriptor, bytes, count) : positioned(descriptor, bytes, count, offset);
    ssize_t result;
    enter();
    {
        struct stat info;
        if (tracked(descriptor, &info)) {
            int flags = fcntl(descriptor, F_GETFL);
            off_t start = offset;
            if (flags >= 0 && (flags & O_APPEND)) start = info.st_size;  // Linux appends whatever the offset
            else if (plain) start = lseek(descriptor, 0, SEEK_CUR);
            if (start >= 0) preserve(descriptor, &info, start, start + (off_t)count);
        }
        result = plain ? plain(descriptor, bytes, count) : positioned(descriptor, bytes, count, offset);
    }
    leave();
    return result;
}

ssize_t write(int fd, const void *bytes, size_t count) {
    REAL(write);
    return fails(WRITE) ? -1 : writing(fd, bytes, count, 0, real, NULL);
}

ssize_t pwrite64(int fd, const void *bytes, size_t count, off64_t offset) {
    REAL(pwrite64);
    return fails(PWRITE64) ? -1 : writing(fd, bytes, count, offset, NULL, real);
}

ssize_t pwrite(int fd, const void *bytes, size_t count, off_t offset) {
    REAL(pwrite);
    return fails(PWRITE64) ? -1 : writing(fd, bytes, count, offset, NULL, real);
}

static int truncating(int (*real)(int, off_t), int descriptor, off_t length) {
    if (!candidate(descriptor)) return real(descriptor, length);
    int result;
    enter();
    {
        struct stat info;
        if (tracked(descriptor, &info)) preserve(descriptor, &info, length, -1);
        result = real(descriptor, length);
    }
    leave();
    return result;
}

int ftruncate(int fd, off_t length) {
    REAL(ftruncate);
    return truncating(real, fd, length);
}

int ftruncate64(int fd, off64_t length) {
    REAL(ftruncate64);
    return truncating(real, fd, length);
}

// MARK: Syncs

static int syncing(int (*real)(int), int descriptor) {
    if (!powercut) return real(descriptor);
    int result;
    enter();
    {
        struct stat info;
        int known = fstat(descriptor, &info) == 0;
        long seq = ++ticks;
        result = real(descriptor);
        if (result == 0 && known && S_ISDIR(info.st_mode)) {
            synced(keyOf(&info), seq);
        } else if (result == 0 && known && S_ISREG(info.st_mode)) {
            File *file = findFile(keyOf(&info));
            if (file != NULL && !file->mapped) dropFile(file);
        }
    }
    leave();
    return result;
}

int fsync(int fd) {
    REAL(fsync);
    return fails(FSYNC) ? -1 : syncing(real, fd);
}

int fdatasync(int fd) {
    REAL(fdatasync);
    return fails(FDATASYNC) ? -1 : syncing(real, fd);
}

// MARK: Opens

static int opening(int folder, const char *path, int flags, mode_t mode, int (*call)(int, const char *, int, mode_t)) {
    char absolute[PATH_MAX];
    Key parent;
    if (!powercut) return call(folder, path, flags, mode);
    if (!resolve(folder, path, absolute, &parent)) {
        int descriptor = call(folder, path, flags, mode);
        untrack(descriptor);
        return descriptor;
    }
    int descriptor;
    enter();
    {
        struct stat before;
        int existed = lookup(absolute, &before);
        if (existed && (flags & O_TRUNC) && S_ISREG(before.st_mode) && (flags & O_ACCMODE) != O_RDONLY) {
            int reader = sys.open(absolute, O_RDONLY | O_CLOEXEC);
            if (reader >= 0 && reader < DESCRIPTORS) {
                Descriptor kept = descriptors[reader];
                descriptors[reader] = (Descriptor){1, 1, keyOf(&before)};
                preserve(reader, &before, 0, -1);
                descriptors[reader] = kept;
            }
            if (reader >= 0) sys.close(reader);
        }
        descriptor = call(folder, path, flags, mode);
        if (descriptor >= 0) {
            track(descriptor, flags);
            struct stat info;
            if ((flags & O_CREAT) && !existed && fstat(descriptor, &info) == 0) record(CREATE, parent, keyOf(&info), absolute, NULL, NULL, 0);
        }
    }
    leave();
    return descriptor;
}

static int openFlags(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

#define MODE(flags) \
    mode_t mode = 0; \
    if (openFlags(flags)) { \
        va_list arguments; \
        va_start(arguments, flags); \
        mode = (mode_t)va_arg(arguments, unsigned int); \
        va_end(arguments); \
    }

static int (*realOpen)(const char *, int, ...);
static int (*realOpen64)(const char *, int, ...);
static int (*realOpenat)(int, const char *, int, ...);
static int (*realOpenat64)(int, const char *, int, ...);

static int callOpen(int folder, const char *path, int flags, mode_t mode) {
    (void)folder;
    if (realOpen == NULL) realOpen = dlsym(RTLD_NEXT, "open");
    return realOpen(path, flags, mode);
}

static int callOpen64(int folder, const char *path, int flags, mode_t mode) {
    (void)folder;
    if (realOpen64 == NULL) realOpen64 = dlsym(RTLD_NEXT, "open64");
    return realOpen64(path, flags, mode);
}

static int callOpenat(int folder, const char *path, int flags, mode_t mode) {
    if (realOpenat == NULL) realOpenat = dlsym(RTLD_NEXT, "openat");
    return realOpenat(folder, path, flags, mode);
}

static int callOpenat64(int folder, const char *path, int flags, mode_t mode) {
    if (realOpenat64 == NULL) realOpenat64 = dlsym(RTLD_NEXT, "openat64");
    return realOpenat64(folder, path, flags, mode);
}

int open(const char *path, int flags, ...) {
    MODE(flags);
    return opening(AT_FDCWD, path, flags, mode, callOpen);
}

int open64(const char *path, int flags, ...) {
    MODE(flags);
    return opening(AT_FDCWD, path, flags, mode, callOpen64);
}

int openat(int folder, const char *path, int flags, ...) {
    MODE(flags);
    return opening(folder, path, flags, mode, callOpenat);
}

int openat64(int folder, const char *path, int flags, ...) {
    MODE(flags);
    return opening(folder, path, flags, mode, callOpenat64);
}

int __open_2(const char *path, int flags) { return opening(AT_FDCWD, path, flags, 0, callOpen); }
int __open64_2(const char *path, int flags) { return opening(AT_FDCWD, path, flags, 0, callOpen64); }
int __openat_2(int folder, const char *path, int flags) { return opening(folder, path, flags, 0, callOpenat); }
int __openat64_2(int folder, const char *path, int flags) { return opening(folder, path, flags, 0, callOpenat64); }

int creat(const char *path, mode_t mode) { return opening(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, callOpen); }
int creat64(const char *path, mode_t mode) { return opening(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, callOpen64); }

// mkstemp and its kin open inside glibc, out of the library's reach: the file they made is
// recorded after.
static int temporary(char *template, int descriptor) {
    char absolute[PATH_MAX];
    Key parent;
    struct stat info;
    if (descriptor >= 0 && resolve(AT_FDCWD, template, absolute, &parent) && fstat(descriptor, &info) == 0) {
        track(descriptor, O_RDWR);
        record(CREATE, parent, keyOf(&info), absolute, NULL, NULL, 0);
    } else {
        untrack(descriptor);
    }
    return descriptor;
}

#define TEMPORARY(call) \
    if (!powercut) return call; \
    int descriptor; \
    enter(); \
    descriptor = temporary(template, call); \
    leave(); \
    return descriptor

int mkstemp(char *template) { REAL(mkstemp); TEMPORARY(real(template)); }
int mkstemp64(char *template) { REAL(mkstemp64); TEMPORARY(real(template)); }
int mkostemp(char *template, int flags) { REAL(mkostemp); TEMPORARY(real(template, flags)); }
int mkostemp64(char *template, int flags) { REAL(mkostemp64); TEMPORARY(real(template, flags)); }
int mkstemps(char *template, int suffix) { REAL(mkstemps); TEMPORARY(real(template, suffix)); }
int mkstemps64(char *template, int suffix) { REAL(mkstemps64); TEMPORARY(real(template, suffix)); }
int mkostemps(char *template, int suffix, int flags) { REAL(mkostemps); TEMPORARY(real(template, suffix, flags)); }
int mkostemps64(char *template, int suffix, int flags) { REAL(mkostemps64); TEMPORARY(real(template, suffix, flags)); }

int close(int fd) {
    REAL(close);
    untrack(fd);
    return real(fd);
}

static int duplicated(int from, int to) {
    if (powercut && to >= 0 && to < DESCRIPTORS) {
        if (from >= 0 && from < DESCRIPTORS) descriptors[to] = descriptors[from];
        else descriptors[to].tracked = 0;
    }
    return to;
}

int dup(int fd) {
    REAL(dup);
    return duplicated(fd, real(fd));
}

int dup2(int fd, int to) {
    REAL(dup2);
    return duplicated(fd, real(fd, to));
}

int dup3(int fd, int to, int flags) {
    REAL(dup3);
    return duplicated(fd, real(fd, to, flags));
}

// A file mapped shared is written through memory the library does not see (SQLite's -shm
// index, which it rebuilds after a crash): it is left as it is.
static void mapping(int descriptor, int flags) {
    if (!candidate(descriptor) || !(flags & MAP_SHARED)) return;
    enter();
    {
        struct stat info;
        if (tracked(descriptor, &info)) {
            File *file = findFile(keyOf(&info));
            if (file == NULL) file = addFile(keyOf(&info), info.st_size);
            file->mapped = 1;
        }
    }
    leave();
}

void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset) {
    REAL(mmap);
    mapping(fd, flags);
    return real(address, length, protection, flags, fd, offset);
}

void *mmap64(void *address, size_t length, int protection, int flags, int fd, off64_t offset) {
    REAL(mmap64);
    mapping(fd, flags);
    return real(address, length, protection, flags, fd, offset);
}

// MARK: Folder changes

static int renaming(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags, int (*perform)(int, const char *, int, const char *, unsigned int)) {
    char source[PATH_MAX];
    char destination[PATH_MAX];
    Key sourceParent;
    Key parent;
    if (!powercut) return perform(fromFolder, from, toFolder, to, flags);
    int inside = resolve(toFolder, to, destination, &parent);
    int fromInside = resolve(fromFolder, from, source, &sourceParent);
    if (!inside || (flags & RENAME_EXCHANGE)) return perform(fromFolder, from, toFolder, to, flags);
    int result;
    enter();
    {
        struct stat moved;
        struct stat replaced;
        char kept[PATH_MAX];
        char *saved = NULL;
        int known = fstatat(fromFolder, from, &moved, AT_SYMLINK_NOFOLLOW) == 0;
        if (lookup(destination, &replaced) && !S_ISDIR(replaced.st_mode)) saved = keep(destination, kept);
        result = perform(fromFolder, from, toFolder, to, flags);
        if (result == 0 && known) record(MOVE, parent, keyOf(&moved), destination, fromInside ? source : NULL, saved, 0);
        else if (saved) sys.unlink(saved);
    }
    leave();
    return result;
}

static int performRename(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags) {
    (void)fromFolder;
    (void)toFolder;
    (void)flags;
    REAL(rename);
    return real(from, to);
}

static int performRenameat(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags) {
    (void)flags;
    REAL(renameat);
    return real(fromFolder, from, toFolder, to);
}

static int performRenameat2(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags) {
    REAL(renameat2);
    return real(fromFolder, from, toFolder, to, flags);
}

int rename(const char *from, const char *to) {
    return fails(RENAME) ? -1 : renaming(AT_FDCWD, from, AT_FDCWD, to, 0, performRename);
}

int renameat(int fromFolder, const char *from, int toFolder, const char *to) {
    return fails(RENAMEAT) ? -1 : renaming(fromFolder, from, toFolder, to, 0, performRenameat);
}

int renameat2(int fromFolder, const char *from, int toFolder, const char *to, unsigned int flags) {
    return fails(RENAMEAT) ? -1 : renaming(fromFolder, from, toFolder, to, flags, performRenameat2);
}

static int removing(int folder, const char *path, int flags, int (*perform)(int, const char *, int)) {
    char absolute[PATH_MAX];
    Key parent;
    if (!resolve(folder, path, absolute, &parent)) return perform(folder, path, flags);
    int result;
    enter();
    {
        struct stat info;
        char kept[PATH_MAX];
        char *saved = NULL;
        int known = lookup(absolute, &info);
        if (known && !(flags & AT_REMOVEDIR) && !S_ISDIR(info.st_mode)) saved = keep(absolute, kept);
        result = perform(folder, path, flags);
        if (result == 0 && known) {
            if (flags & AT_REMOVEDIR) record(REMOVE_FOLDER, parent, keyOf(&info), absolute, NULL, NULL, info.st_mode);
            else record(REMOVE, parent, keyOf(&info), absolute, NULL, saved, 0);
        } else if (saved) {
            sys.unlink(saved);
        }
    }
    leave();
    return result;
}

static int performUnlink(int folder, const char *path, int flags) {
    (void)folder;
    (void)flags;
    REAL(unlink);
    return real(path);
}

static int performUnlinkat(int folder, const char *path, int flags) {
    REAL(unlinkat);
    return real(folder, path, flags);
}

static int performRmdir(int folder, const char *path, int flags) {
    (void)folder;
    (void)flags;
    REAL(rmdir);
    return real(path);
}

int unlink(const char *path) {
    return fails(UNLINK) ? -1 : removing(AT_FDCWD, path, 0, performUnlink);
}

int unlinkat(int folder, const char *path, int flags) {
    return fails(UNLINKAT) ? -1 : removing(folder, path, flags, performUnlinkat);
}

int rmdir(const char *path) {
    return removing(AT_FDCWD, path, AT_REMOVEDIR, performRmdir);
}

static int making(int folder, const char *path, mode_t mode, int (*perform)(int, const char *, mode_t)) {
    char absolute[PATH_MAX];
    Key parent;
    if (!resolve(folder, path, absolute, &parent)) return perform(folder, path, mode);
    int result;
    enter();
    {
        result = perform(folder, path, mode);
        struct stat info;
        if (result == 0 && lookup(absolute, &info)) record(MAKE_FOLDER, parent, keyOf(&info), absolute, NULL, NULL, 0);
    }
    leave();
    return result;
}

static int performMkdir(int folder, const char *path, mode_t mode) {
    (void)folder;
    REAL(mkdir);
    return real(path, mode);
}

static int performMkdirat(int folder, const char *path, mode_t mode) {
    REAL(mkdirat);
    return real(folder, path, mode);
}

int mkdir(const char *path, mode_t mode) {
    return making(AT_FDCWD, path, mode, performMkdir);
}

int mkdirat(int folder, const char *path, mode_t mode) {
    return making(folder, path, mode, performMkdirat);
}
