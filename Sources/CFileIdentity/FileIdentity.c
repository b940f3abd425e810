#if defined(__linux__)
#define _GNU_SOURCE
#endif
#include "CFileIdentity.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

int concord_file_identity_of(const char *path, concord_file_identity *identity) {
    memset(identity, 0, sizeof *identity);
#if defined(__linux__) && defined(STATX_BTIME)
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_INO | STATX_BTIME, &sx) == 0) {
        identity->inode = sx.stx_ino;
        if (sx.stx_mask & STATX_BTIME) {
            identity->birthSeconds = sx.stx_btime.tv_sec;
            identity->birthNanoseconds = sx.stx_btime.tv_nsec;
            identity->hasBirth = 1;
        }
        return 0;
    }
    if (errno != ENOSYS) return -1;
#endif
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    identity->inode = (uint64_t)st.st_ino;
#if defined(__APPLE__) || defined(__FreeBSD__) || defined(__NetBSD__)
    identity->birthSeconds = st.st_birthtimespec.tv_sec;
    identity->birthNanoseconds = st.st_birthtimespec.tv_nsec;
    identity->hasBirth = 1;
#endif
    return 0;
}
