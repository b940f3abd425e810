// ConcordPowerCutCheck: checks the power-cut mode of the fault library
// (Sources/ConcordFaultInjection/FaultInjection.c), run by CrashTests.powerCutModeKeepsExactlyWhatWasDurable.
//
//   ConcordPowerCutCheck LIBRARY FOLDER
//
// For each scenario it makes FOLDER/NAME/disk (the power-cut root) and FOLDER/NAME/outside,
// writes their starting files (durable: written before the process under test starts),
// then runs itself as `ConcordPowerCutCheck scenario NAME FOLDER/NAME` with LIBRARY preloaded
// and CONCORD_FAULT set to cut the power at the scenario's last call (by default the first
// unlinkat, which only the cut makes). It checks that the child died of SIGKILL, that the
// shadow folder is gone, and what the disk holds. Prints one line per scenario; exits 1 if
// any failed.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[PATH_MAX];  // FOLDER/NAME

static const char *at(const char *name) {
    static char paths[8][PATH_MAX];
    static int next;
    char *path = paths[next++ % 8];
    snprintf(path, PATH_MAX, "%s/%s", base, name);
    return path;
}

static void die(const char *what) {
    fprintf(stderr, "ConcordPowerCutCheck: %s: %s\n", what, strerror(errno));
    exit(2);
}

// MARK: In the child, under the library

static int openFile(const char *name, int flags) {
    int descriptor = open(at(name), flags, 0644);
    if (descriptor < 0) die(name);
    return descriptor;
}

static void put(int descriptor, const char *text) {
    if (write(descriptor, text, strlen(text)) != (ssize_t)strlen(text)) die("write");
}

static void syncFolder(const char *name) {
    int descriptor = open(at(name), O_RDONLY | O_DIRECTORY);
    if (descriptor < 0 || fsync(descriptor) != 0) die(name);
    close(descriptor);
}

// The call the default fault (unlinkat:1:powercut) cuts the power before.
static void cutNow(void) {
    unlinkat(AT_FDCWD, "/nonexistent/concord-powercut-marker", 0);
    fprintf(stderr, "ConcordPowerCutCheck: the power was not cut\n");
    exit(3);
}

static void unsyncedWrite(void) {
    int file = openFile("disk/a", O_WRONLY);
    put(file, "new content");
    cutNow();
}

static void syncedWrite(void) {
    int file = openFile("disk/a", O_WRONLY | O_TRUNC);
    put(file, "synced");
    if (fsync(file) != 0) die("fsync");
    put(file, " and more");
    cutNow();
}

static void datasyncedWrite(void) {
    int file = openFile("disk/a", O_RDWR);
    if (pwrite(file, "XY", 2, 0) != 2 || fdatasync(file) != 0) die("pwrite");
    if (pwrite(file, "tail", 4, 10) != 4) die("pwrite");
    cutNow();
}

static void overwriteTruncateAppend(void) {
    int file = openFile("disk/a", O_RDWR);
    if (pwrite(file, "ab", 2, 2) != 2 || ftruncate(file, 5) != 0 || pwrite(file, "zz", 2, 8) != 2) die("pwrite");
    int append = openFile("disk/a", O_WRONLY | O_APPEND);
    put(append, "!");
    cutNow();
}

static void cutBeforeTheSync(void) {
    int file = openFile("disk/a", O_WRONLY | O_TRUNC);
    put(file, "never durable");
    fsync(file);  // the cut comes first (fsync:1:powercut)
    exit(3);
}

static void newFileWithoutFolderSync(void) {
    int file = openFile("disk/b", O_WRONLY | O_CREAT | O_EXCL);
    put(file, "b");
    if (fsync(file) != 0) die("fsync");
    cutNow();
}

static void newFileWithFolderSync(void) {
    int file = openFile("disk/b", O_WRONLY | O_CREAT | O_EXCL);
    put(file, "b");
    if (fsync(file) != 0) die("fsync");
    syncFolder("disk");
    cutNow();
}

static void newFileFolderSyncedNotItsContent(void) {
    int file = openFile("disk/b", O_WRONLY | O_CREAT | O_EXCL);
    syncFolder("disk");
    put(file, "b");
    cutNow();
}

static void renameWithoutFolderSync(void) {
    if (rename(at("disk/a"), at("disk/c")) != 0) die("rename");
    cutNow();
}

static void renameWithFolderSync(void) {
    if (rename(at("disk/a"), at("disk/c")) != 0) die("rename");
    syncFolder("disk");
    cutNow();
}

static void renameAcrossSourceSynced(void) {
    if (rename(at("disk/tmp/x"), at("disk/final/x")) != 0) die("rename");
    syncFolder("disk/tmp");
    cutNow();
}

static void renameAcrossDestinationSynced(void) {
    if (rename(at("disk/tmp/x"), at("disk/final/x")) != 0) die("rename");
    syncFolder("disk/final");
    cutNow();
}

static void unlinkWithoutFolderSync(void) {
    if (unlink(at("disk/a")) != 0) die("unlink");
    cutNow();
}

static void unlinkWithFolderSync(void) {
    if (unlink(at("disk/a")) != 0) die("unlink");
    syncFolder("disk");
    cutNow();
}

static void folderWithoutParentSync(void) {
    if (mkdir(at("disk/d"), 0755) != 0) die("mkdir");
    int file = openFile("disk/d/f", O_WRONLY | O_CREAT | O_EXCL);
    put(file, "f");
    if (fsync(file) != 0) die("fsync");
    syncFolder("disk/d");
    cutNow();
}

static void folderWithParentSync(void) {
    if (mkdir(at("disk/d"), 0755) != 0) die("mkdir");
    syncFolder("disk");
    int file = openFile("disk/d/f", O_WRONLY | O_CREAT | O_EXCL);
    put(file, "f");
    if (fsync(file) != 0) die("fsync");
    syncFolder("disk/d");
    cutNow();
}

static void temporaryFile(void) {
    char template[PATH_MAX];
    snprintf(template, sizeof template, "%s", at("disk/incoming-XXXXXX"));
    int file = mkstemp(template);
    if (file < 0) die("mkstemp");
    put(file, "temporary");
    if (fsync(file) != 0) die("fsync");
    cutNow();
}

// The atomic replace, relative to an open folder (openat, renameat): done right, the new
// content survives.
static void replaceDoneRight(void) {
    int folder = open(at("disk"), O_RDONLY | O_DIRECTORY);
    int file = openat(folder, ".tmp-a", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (folder < 0 || file < 0) die("openat");
    put(file, "replaced");
    if (fsync(file) != 0 || renameat(folder, ".tmp-a", folder, "a") != 0 || fsync(folder) != 0) die("replace");
    cutNow();
}

// The same without the file's fsync: the name survives, the content does not — an empty
// file under the final name, what a kill never shows.
static void replaceWithoutFileSync(void) {
    int folder = open(at("disk"), O_RDONLY | O_DIRECTORY);
    int file = openat(folder, ".tmp-a", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (folder < 0 || file < 0) die("openat");
    put(file, "replaced");
    if (renameat(folder, ".tmp-a", folder, "a") != 0 || fsync(folder) != 0) die("replace");
    cutNow();
}

// Calls on two threads: the cut sees each of the other thread's writes done or not done.
static void *writer(void *argument) {
    (void)argument;
    int file = openFile("disk/w", O_WRONLY | O_CREAT | O_TRUNC);
    for (;;) {
        if (pwrite(file, "0123456789", 10, 0) != 10) die("pwrite");
    }
    return NULL;
}

static void anotherThread(void) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, writer, NULL) != 0) die("pthread_create");
    usleep(20000);
    cutNow();
}

static void outsideTheRoot(void) {
    int file = openFile("outside/o", O_WRONLY | O_TRUNC);
    put(file, "new");
    cutNow();
}

// MARK: In the parent

static void save(const char *name, const char *text) {
    int descriptor = open(at(name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (descriptor < 0 || write(descriptor, text, strlen(text)) != (ssize_t)strlen(text)) die(name);
    close(descriptor);
}

static void folder(const char *name) {
    if (mkdir(at(name), 0755) != 0) die(name);
}

// The content of `name`, or NULL if it is missing.
static const char *content(const char *name) {
    static char buffer[8][256];
    static int next;
    char *text = buffer[next++ % 8];
    int descriptor = open(at(name), O_RDONLY);
    if (descriptor < 0) return NULL;
    ssize_t count = read(descriptor, text, 255);
    close(descriptor);
    if (count < 0) return NULL;
    for (ssize_t index = 0; index < count; index++) {
        if (text[index] == 0) text[index] = '.';  // a hole, readable
    }
    text[count] = 0;
    return text;
}

static int exists(const char *name) { return access(at(name), F_OK) == 0; }

static char failure[512];

static int expect(const char *name, const char *expected) {
    const char *found = content(name);
    if (expected == NULL ? found == NULL : found != NULL && strcmp(found, expected) == 0) return 1;
    snprintf(failure, sizeof failure, "%s holds %s%s%s, not %s%s%s", name, found ? "\"" : "", found ? found : "nothing", found ? "\"" : "",
             expected ? "\"" : "", expected ? expected : "nothing", expected ? "\"" : "");
    return 0;
}

static void withA(void) { save("disk/a", "old"); }
static void withDigits(void) { save("disk/a", "0123456789"); }
static void withAAndC(void) {
    save("disk/a", "a");
    save("disk/c", "c");
}
static void withFolders(void) {
    folder("disk/tmp");
    folder("disk/final");
    save("disk/tmp/x", "x");
}
static void withOutside(void) { save("outside/o", "old"); }
static void nothing(void) {}

static int checkOld(void) { return expect("disk/a", "old"); }
static int checkSynced(void) { return expect("disk/a", "synced"); }
static int checkDatasynced(void) { return expect("disk/a", "XYd"); }
static int checkDigits(void) { return expect("disk/a", "0123456789"); }
static int checkNoB(void) { return expect("disk/b", NULL); }
static int checkB(void) { return expect("disk/b", "b"); }
static int checkEmptyB(void) { return expect("disk/b", ""); }
static int checkNotRenamed(void) { return expect("disk/a", "a") && expect("disk/c", "c"); }
static int checkRenamed(void) { return expect("disk/a", NULL) && expect("disk/c", "a"); }
static int checkInTmp(void) { return expect("disk/tmp/x", "x") && expect("disk/final/x", NULL); }
static int checkInFinal(void) { return expect("disk/tmp/x", NULL) && expect("disk/final/x", "x"); }
static int checkA(void) { return expect("disk/a", "a"); }
static int checkNoA(void) { return expect("disk/a", NULL); }
static int checkNoFolder(void) {
    if (!exists("disk/d")) return 1;
    snprintf(failure, sizeof failure, "disk/d survived");
    return 0;
}
static int checkFolder(void) { return expect("disk/d/f", "f"); }
static int checkNoTemporary(void) {
    DIR *disk = opendir(at("disk"));
    if (disk == NULL) die("opendir");
    struct dirent *entry;
    int found = 0;
    while ((entry = readdir(disk)) != NULL) found |= strncmp(entry->d_name, "incoming-", 9) == 0;
    closedir(disk);
    if (!found) return 1;
    snprintf(failure, sizeof failure, "the temporary file survived");
    return 0;
}
static int checkReplaced(void) { return expect("disk/a", "replaced") && expect("disk/.tmp-a", NULL); }
static int checkEmptyA(void) { return expect("disk/a", ""); }
static int checkWritten(void) {
    const char *found = content("disk/w");
    // Created, never synced, in a folder never synced: gone (or, had the cut come before
    // the open, never there).
    if (found == NULL) return 1;
    snprintf(failure, sizeof failure, "disk/w holds \"%s\"", found);
    return 0;
}
static int checkOutside(void) { return expect("outside/o", "new"); }

typedef struct {
    const char *name;
    const char *fault;  // NULL: unlinkat:1:powercut
    void (*setup)(void);
    void (*run)(void);
    int (*check)(void);
    const char *what;
} Scenario;

static const Scenario scenarios[] = {
    {"unsynced-write", NULL, withA, unsyncedWrite, checkOld, "a write never synced is lost"},
    {"synced-write", NULL, withA, syncedWrite, checkSynced, "an fsynced write survives, the one after it is lost"},
    {"datasynced-write", NULL, withA, datasyncedWrite, checkDatasynced, "an fdatasynced write survives, size included"},
    {"overwrite-truncate-append", NULL, withDigits, overwriteTruncateAppend, checkDigits, "overwrites, a truncation and an append are all undone"},
    {"cut-before-the-sync", "fsync:1:powercut", withA, cutBeforeTheSync, checkOld, "the cut comes before the call it is set on"},
    {"new-file-unsynced-folder", NULL, nothing, newFileWithoutFolderSync, checkNoB, "a new file, fsynced, in a folder not fsynced since, is gone"},
    {"new-file-synced-folder", NULL, nothing, newFileWithFolderSync, checkB, "a new file, fsynced, its folder fsynced, survives"},
    {"new-file-unsynced-content", NULL, nothing, newFileFolderSyncedNotItsContent, checkEmptyB, "a new file whose folder was fsynced but not itself is empty"},
    {"rename-unsynced", NULL, withAAndC, renameWithoutFolderSync, checkNotRenamed, "a rename over a file, its folder not fsynced, is undone and the file returns"},
    {"rename-synced", NULL, withAAndC, renameWithFolderSync, checkRenamed, "a rename, its folder fsynced, survives"},
    {"rename-across-source-synced", NULL, withFolders, renameAcrossSourceSynced, checkInTmp, "a rename into a folder not fsynced is undone"},
    {"rename-across-destination-synced", NULL, withFolders, renameAcrossDestinationSynced, checkInFinal, "a rename into a folder fsynced survives"},
    {"unlink-unsynced", NULL, withAAndC, unlinkWithoutFolderSync, checkA, "a removal, its folder not fsynced, is undone"},
    {"unlink-synced", NULL, withAAndC, unlinkWithFolderSync, checkNoA, "a removal, its folder fsynced, survives"},
    {"folder-unsynced-parent", NULL, nothing, folderWithoutParentSync, checkNoFolder, "a new folder whose parent was not fsynced is gone with what it holds"},
    {"folder-synced-parent", NULL, nothing, folderWithParentSync, checkFolder, "a new folder whose parent was fsynced keeps its synced file"},
    {"mkstemp", NULL, nothing, temporaryFile, checkNoTemporary, "a file made by mkstemp, folder not fsynced, is gone"},
    {"replace-done-right", NULL, withA, replaceDoneRight, checkReplaced, "write, fsync, renameat, fsync the folder: the new content survives"},
    {"replace-without-file-sync", NULL, withA, replaceWithoutFileSync, checkEmptyA, "without the file's fsync the final name holds an empty file"},
    {"another-thread", NULL, nothing, anotherThread, checkWritten, "another thread's writes are cut too"},
    {"outside-the-root", NULL, withOutside, outsideTheRoot, checkOutside, "files outside the root are not touched"},
};

static const Scenario *find(const char *name) {
    for (size_t index = 0; index < sizeof scenarios / sizeof *scenarios; index++) {
        if (strcmp(scenarios[index].name, name) == 0) return &scenarios[index];
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "scenario") == 0) {
        const Scenario *scenario = find(argv[2]);
        if (scenario == NULL) return 2;
        snprintf(base, sizeof base, "%s", argv[3]);
        scenario->run();
        return 3;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: ConcordPowerCutCheck LIBRARY FOLDER\n");
        return 2;
    }
    int failed = 0;
    for (size_t index = 0; index < sizeof scenarios / sizeof *scenarios; index++) {
        const Scenario *scenario = &scenarios[index];
        snprintf(base, sizeof base, "%s/%s", argv[2], scenario->name);
        if (mkdir(base, 0755) != 0) die(base);
        folder("disk");
        folder("outside");
        scenario->setup();
        pid_t child = fork();
        if (child < 0) die("fork");
        if (child == 0) {
            setenv("LD_PRELOAD", argv[1], 1);
            setenv("CONCORD_FAULT", scenario->fault ? scenario->fault : "unlinkat:1:powercut", 1);
            setenv("CONCORD_POWERCUT_ROOT", at("disk"), 1);
            execl("/proc/self/exe", argv[0], "scenario", scenario->name, base, (char *)NULL);
            _exit(4);
        }
        int status = 0;
        if (waitpid(child, &status, 0) != child) die("waitpid");
        int ok = 0;
        failure[0] = 0;
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
            snprintf(failure, sizeof failure, "the child was not killed (status %d)", status);
        } else {
            char shadow[PATH_MAX];
            snprintf(shadow, sizeof shadow, "%s/disk/.concord-powercut-%d", base, (int)child);
            if (access(shadow, F_OK) == 0) snprintf(failure, sizeof failure, "the shadow folder was left behind");
            else ok = scenario->check();
        }
        printf("%s %s: %s%s%s\n", ok ? "ok  " : "FAIL", scenario->name, scenario->what, ok ? "" : " — ", ok ? "" : failure);
        failed += !ok;
    }
    printf("%zu scenarios, %d failed\n", sizeof scenarios / sizeof *scenarios, failed);
    return failed ? 1 : 0;
}
