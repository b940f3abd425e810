#ifndef CFILEIDENTITY_H
#define CFILEIDENTITY_H

#include <stdint.h>

/// What tells one file from another at one path: its inode number and, where the file
/// system records it, its birth time. A file copied or restored from a backup into a path
/// is a new file (a new birth time, even where its inode number is reused); a file
/// written in place keeps both.
typedef struct {
    uint64_t inode;
    int64_t birthSeconds;
    int64_t birthNanoseconds;
    /// 1 when the birth time is known (statx's STATX_BTIME on Linux, st_birthtimespec on
    /// Apple platforms and the BSDs), 0 otherwise.
    int hasBirth;
} concord_file_identity;

/// Fills `identity` for the file at `path`. Returns 0, or -1 with errno set.
int concord_file_identity_of(const char *path, concord_file_identity *identity);

#endif
