/*
 * The SQLite work of StoreBenchmarks' local writes and remote apply, done through SQLite's C
 * API with no Swift at all, beside the raw baselines (Benchmarks/README.md, "What the
 * schema costs"). It answers: how close to raw SQLite could the store get with its present
 * tables and statements, if everything around SQLite cost nothing?
 *
 *   cc -O2 -o floor Benchmarks/Tools/SQLiteFloor/floor.c -lsqlite3
 *   ./floor DIR CASE      (DIR: /dev/shm or a disk folder)
 *
 * Cases, each 10,000 records x 10 fields as in StoreBenchmarks (integers on even fields,
 * short strings on odd ones), WAL and synchronous = FULL:
 *   raw-writes       the raw baseline: one WITHOUT ROWID table, an upsert per field, 100 commits
 *   store-writes     the store's statements for the same writes: per record the liveness and
 *                    existence query, the liveness dot and the outbox row; per field the
 *                    register upsert into concord_fields with its partial index of unsealed
 *                    fields (dirty > 0)
 *   store-fields     the register upserts alone
 *   store-fields-nodirty   the register upserts, with no partial index
 *   store-writes-nodirty   store-writes with no partial index
 *   lean-writes      a leaner schema for the same writes, for comparison: concord_fields WITHOUT
 *                    ROWID with the replica as an integer and no file columns, no partial index,
 *                    and per record only the liveness dot and the outbox row (no existence query)
 *   raw-apply        the raw baseline of the apply: an LWW upsert of 100,000 rows over existing
 *                    ones, one transaction
 *   store-apply      the store's apply over existing rows, one transaction: per record the join of
 *                    its liveness dots (the observed dot deleted, the delta's inserted), per field
 *                    the apply's upsert with its lookup of what the origin observed
 *   store-apply-nodirty    store-apply with no partial index
 *   store-apply-noliveness store-apply without the liveness join (to attribute its cost; the
 *                    store must do it)
 *   store-apply-nolookup   store-apply comparing with one bound stamp instead of looking up what
 *                    the origin observed of each row's replica (to attribute the lookup's cost)
 *   store-apply-upserts    store-apply with neither: the upserts alone
 * The store's statements since its upserts were batched (one statement for a record's fields):
 *   batched-writes   per record the liveness and existence query, the liveness dot, the outbox
 *                    row, and one upsert of the record's ten registers (with the partial index)
 *   batched-writes-noquery, batched-writes-nodirty, batched-writes-noquery-nodirty
 *                    without the existence query, the partial index, or both (attribution only)
 *   batched-fields   the batched register upserts alone
 *   writes-now       the store's statements for these writes since schema version 3 and the
 *                    batched liveness rows: per record its three-descent existence query and one
 *                    upsert of its ten registers (no partial index); per 32 records one insert of
 *                    their liveness dots and one upsert of their outbox rows
 *   batched-apply    per record the liveness join (the observed dots the delta does not hold
 *                    deleted, nothing read back; the delta's new dot inserted) and one upsert of
 *                    the record's ten fields with the lookup of what the origin observed
 *   batched-apply-upserts  the batched upserts alone
 * Prints the timed part in milliseconds.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void exec(sqlite3 *db, const char *sql) {
    char *error = 0;
    if (sqlite3_exec(db, sql, 0, 0, &error) != SQLITE_OK) { fprintf(stderr, "%s: %s\n", sql, error); exit(1); }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement;
    if (sqlite3_prepare_v2(db, sql, -1, &statement, 0) != SQLITE_OK) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); exit(1); }
    return statement;
}

static void step(sqlite3_stmt *statement) {
    int code;
    while ((code = sqlite3_step(statement)) == SQLITE_ROW) {}
    if (code != SQLITE_DONE) { fprintf(stderr, "step: %d\n", code); exit(1); }
    sqlite3_reset(statement);
}

enum { RECORDS = 10000, FIELDS = 10 };
static const unsigned char replicaA[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static char names[FIELDS][16];

/* The workload's value of a field, bound at `column` (kind at column - 1 when `kinds`). */
static void bindValue(sqlite3_stmt *statement, int column, int record, int field, int round, int kinds) {
    char text[32];
    if (field % 2 == 0) {
        if (kinds) sqlite3_bind_int64(statement, column - 1, 2);
        sqlite3_bind_int64(statement, column, (long long)record * 7 + field + round);
    } else {
        if (kinds) sqlite3_bind_int64(statement, column - 1, 4);
        snprintf(text, sizeof text, "v%d-%d", record % 1000, round);
        sqlite3_bind_text(statement, column, text, -1, SQLITE_TRANSIENT);
    }
}

static void storeSchema(sqlite3 *db, int dirtyIndex) {
    exec(db,
         "CREATE TABLE concord_fields (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, kind INTEGER NOT NULL,"
         " value ANY, file_size INTEGER, media_type TEXT, hlc INTEGER NOT NULL, replica BLOB NOT NULL,"
         " versions INTEGER NOT NULL DEFAULT 1, dirty INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (collection, id, field)) STRICT;"
         "CREATE TABLE concord_elements (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, element BLOB NOT NULL,"
         " hlc INTEGER NOT NULL, replica BLOB NOT NULL, PRIMARY KEY (collection, id, field, element, hlc, replica)) STRICT;"
         "CREATE TABLE concord_dots (collection TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, hlc INTEGER NOT NULL,"
         " replica BLOB NOT NULL, PRIMARY KEY (collection, id, kind, hlc, replica)) STRICT;"
         "CREATE TABLE concord_outbox (collection TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL, field TEXT NOT NULL,"
         " element BLOB NOT NULL, hlc INTEGER NOT NULL, PRIMARY KEY (collection, id, kind, field, element)) STRICT, WITHOUT ROWID;");
    if (dirtyIndex) exec(db, "CREATE INDEX concord_fields_dirty ON concord_fields (dirty) WHERE dirty > 0;");
}

static const char *rawUpsert =
    "INSERT INTO fields VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (collection, id, field)"
    " DO UPDATE SET value = excluded.value, stamp = excluded.stamp";
static const char *rawMerge =
    "INSERT INTO fields VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (collection, id, field)"
    " DO UPDATE SET value = excluded.value, stamp = excluded.stamp WHERE excluded.stamp > stamp";
static const char *storeUpsert =
    "INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)"
    " VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6, ?7, 1, ?8) ON CONFLICT (collection, id, field) DO UPDATE SET"
    " kind = ?4, value = ?5, file_size = NULL, media_type = NULL, hlc = ?6, replica = ?7, dirty = ?8"
    " WHERE concord_fields.versions = 1 AND concord_fields.kind != 6";
static const char *storeApply =
    "INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)"
    " VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6, ?7, 1, 0) ON CONFLICT (collection, id, field) DO UPDATE SET"
    " kind = ?4, value = ?5, file_size = NULL, media_type = NULL, hlc = ?6, replica = ?7"
    " WHERE concord_fields.versions = 1 AND concord_fields.kind != 6"
    " AND concord_fields.hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_fields.replica), 0)";
static const char *insertDotSQL = "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES (?, ?, ?, ?, ?)";
/* A record's first write in a transaction: its liveness dots, whether it has any row, and whether it has set elements. */
static const char *livenessQuerySQL =
    "SELECT hlc, replica, NULL FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = 0 UNION ALL"
    " SELECT NULL, NULL, EXISTS (SELECT 1 FROM concord_elements WHERE collection = ?1 AND id = ?2)"
    " WHERE EXISTS (SELECT 1 FROM concord_dots WHERE collection = ?1 AND id = ?2)"
    " OR EXISTS (SELECT 1 FROM concord_fields WHERE collection = ?1 AND id = ?2)"
    " OR EXISTS (SELECT 1 FROM concord_elements WHERE collection = ?1 AND id = ?2)";
static const char *markOutboxSQL =
    "INSERT INTO concord_outbox (collection, id, kind, field, element, hlc) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)";
static const char *storeApplyBound =
    "INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)"
    " VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, ?6, ?7, 1, 0) ON CONFLICT (collection, id, field) DO UPDATE SET"
    " kind = ?4, value = ?5, file_size = NULL, media_type = NULL, hlc = ?6, replica = ?7"
    " WHERE concord_fields.versions = 1 AND concord_fields.kind != 6 AND concord_fields.hlc < ?6";

/* Binds a record's collection and id at 1 and 2. */
static void bindRecord(sqlite3_stmt *statement, const char *id) {
    sqlite3_bind_text(statement, 1, "items", -1, SQLITE_STATIC);
    sqlite3_bind_text(statement, 2, id, -1, SQLITE_TRANSIENT);
}

/* A field's key: collection, id and field name, parameters 1 to 3. */
static void bindKey(sqlite3_stmt *statement, const char *id, int field) {
    bindRecord(statement, id);
    sqlite3_bind_text(statement, 3, names[field], -1, SQLITE_STATIC);
}

/* A record's liveness dot (kind 0) at `stamp`, written by replica A. */
static void insertDot(sqlite3_stmt *dot, const char *id, long long stamp) {
    bindRecord(dot, id);
    sqlite3_bind_int64(dot, 3, 0);
    sqlite3_bind_int64(dot, 4, stamp);
    sqlite3_bind_blob(dot, 5, replicaA, 16, SQLITE_STATIC);
    step(dot);
}

/* The outbox row of a record's liveness slot, at `stamp`. */
static void markOutbox(sqlite3_stmt *outbox, const char *id, long long stamp) {
    bindRecord(outbox, id);
    sqlite3_bind_int64(outbox, 3, 0);
    sqlite3_bind_text(outbox, 4, "", -1, SQLITE_STATIC);
    sqlite3_bind_blob(outbox, 5, "", 0, SQLITE_STATIC);
    sqlite3_bind_int64(outbox, 6, stamp);
    step(outbox);
}

/* Every field of every record through `statement`; `store` selects the store's columns. */
static void writeRows(sqlite3 *db, sqlite3_stmt *statement, int store, int round, long long stamp, long long dirty,
                      int perRecord, sqlite3_stmt *query, sqlite3_stmt *dot, sqlite3_stmt *outbox, int commitEvery,
                      sqlite3_stmt *removeDots) {
    exec(db, "BEGIN IMMEDIATE");
    for (int record = 0; record < RECORDS; record++) {
        if (commitEvery && record > 0 && record % commitEvery == 0) { exec(db, "COMMIT"); exec(db, "BEGIN IMMEDIATE"); }
        char id[32];
        snprintf(id, sizeof id, "item%d", record);
        if (removeDots) {
            /* The apply's join of a record's liveness dots: the observed ones go, the delta's come. */
            bindRecord(removeDots, id);
            step(removeDots);
        }
        if (dot && !query) {
            insertDot(dot, id, stamp);
        }
        if (perRecord) {
            bindRecord(query, id);
            step(query);
            insertDot(dot, id, stamp);
            markOutbox(outbox, id, stamp);
        }
        for (int field = 0; field < FIELDS; field++) {
            bindKey(statement, id, field);
            if (store) {
                bindValue(statement, 5, record, field, round, 1);
                sqlite3_bind_int64(statement, 6, stamp + record * FIELDS + field);
                sqlite3_bind_blob(statement, 7, replicaA, 16, SQLITE_STATIC);
                if (sqlite3_bind_parameter_count(statement) >= 8) sqlite3_bind_int64(statement, 8, dirty);
            } else {
                bindValue(statement, 4, record, field, round, 0);
                sqlite3_bind_int64(statement, 5, stamp + record * FIELDS + field);
            }
            step(statement);
        }
    }
    exec(db, "COMMIT");
}

/* An upsert into concord_fields of FIELDS rows in one statement: `shared` parameters first,
   then `perRow` per row, each row's VALUES tuple written by `row` from its first parameter. */
static sqlite3_stmt *prepareBatched(sqlite3 *db, int shared, int perRow, void (*row)(char *, size_t, int),
                                    const char *onConflict) {
    char sql[8192];
    size_t used = (size_t)snprintf(sql, sizeof sql,
        "INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty) VALUES ");
    for (int field = 0; field < FIELDS; field++) {
        if (field > 0) used += (size_t)snprintf(sql + used, sizeof sql - used, ", ");
        row(sql + used, sizeof sql - used, shared + 1 + perRow * field);
        used = strlen(sql);
    }
    snprintf(sql + used, sizeof sql - used, " %s", onConflict);
    return prepare(db, sql);
}

/* A local write's row: name, kind, value, file size, media type; hlc, replica, dirty shared (3-5). */
static void writeRow(char *out, size_t size, int first) {
    snprintf(out, size, "(?1, ?2, ?%d, ?%d, ?%d, ?%d, ?%d, ?3, ?4, 1, ?5)", first, first + 1, first + 2, first + 3, first + 4);
}

/* An applied row: name, kind, value, hlc; the origin shared (3). */
static void applyRow(char *out, size_t size, int first) {
    snprintf(out, size, "(?1, ?2, ?%d, ?%d, ?%d, NULL, NULL, ?%d, ?3, 1, 0)", first, first + 1, first + 2, first + 3);
}

/* Every record through one batched upsert each (`apply`: the applied rows' statement), with
   the per-record statements given (any may be 0), committing every `commitEvery` records. */
static void batchedRecords(sqlite3 *db, sqlite3_stmt *upsert, int apply, int round, long long stamp, int commitEvery,
                           sqlite3_stmt *query, sqlite3_stmt *dot, sqlite3_stmt *outbox, sqlite3_stmt *removeDots) {
    exec(db, "BEGIN IMMEDIATE");
    for (int record = 0; record < RECORDS; record++) {
        if (commitEvery && record > 0 && record % commitEvery == 0) { exec(db, "COMMIT"); exec(db, "BEGIN IMMEDIATE"); }
        char id[32];
        snprintf(id, sizeof id, "item%d", record);
        if (query) {
            bindRecord(query, id);
            step(query);
        }
        if (removeDots) {
            /* Keeping the delta's own dot (new here, so nothing is kept). */
            bindRecord(removeDots, id);
            sqlite3_bind_int64(removeDots, 3, stamp);
            sqlite3_bind_blob(removeDots, 4, replicaA, 16, SQLITE_STATIC);
            step(removeDots);
        }
        if (dot) insertDot(dot, id, stamp);
        if (outbox) markOutbox(outbox, id, stamp);
        bindRecord(upsert, id);
        if (apply) {
            sqlite3_bind_blob(upsert, 3, replicaA, 16, SQLITE_STATIC);
        } else {
            sqlite3_bind_int64(upsert, 3, stamp);
            sqlite3_bind_blob(upsert, 4, replicaA, 16, SQLITE_STATIC);
            sqlite3_bind_int64(upsert, 5, stamp);
        }
        for (int field = 0; field < FIELDS; field++) {
            int first = apply ? 4 + 4 * field : 6 + 5 * field;
            sqlite3_bind_text(upsert, first, names[field], -1, SQLITE_STATIC);
            bindValue(upsert, first + 2, record, field, round, 1);
            if (apply) {
                sqlite3_bind_int64(upsert, first + 3, stamp + record * FIELDS + field);
            } else {
                sqlite3_bind_null(upsert, first + 3);
                sqlite3_bind_null(upsert, first + 4);
            }
        }
        step(upsert);
    }
    exec(db, "COMMIT");
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: floor DIR CASE (see the source)\n"); return 2; }
    const char *which = argv[2];
    for (int field = 0; field < FIELDS; field++) snprintf(names[field], sizeof names[field], "field%d", field);
    char path[512];
    snprintf(path, sizeof path, "%s/floor-%d.db", argv[1], (int)getpid());
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
    int raw = strncmp(which, "raw-", 4) == 0;
    int nodirty = strstr(which, "-nodirty") != 0 || strcmp(which, "writes-now") == 0;  /* schema version 3: no partial index */
    if (raw) {
        exec(db, "CREATE TABLE fields (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, value ANY,"
                 " stamp INTEGER NOT NULL, PRIMARY KEY (collection, id, field)) STRICT, WITHOUT ROWID");
    } else {
        storeSchema(db, !nodirty);
    }
    long long base = 1LL << 40;
    double start = 0, end = 0;
    if (strcmp(which, "raw-writes") == 0) {
        sqlite3_stmt *upsert = prepare(db, rawUpsert);
        start = now();
        writeRows(db, upsert, 0, 0, base, 0, 0, 0, 0, 0, 100, 0);
        end = now();
    } else if (strncmp(which, "store-writes", 12) == 0 || strncmp(which, "store-fields", 12) == 0) {
        int perRecord = strncmp(which, "store-writes", 12) == 0;
        sqlite3_stmt *upsert = prepare(db, storeUpsert);
        sqlite3_stmt *query = prepare(db, livenessQuerySQL);
        sqlite3_stmt *dot = prepare(db, insertDotSQL);
        sqlite3_stmt *outbox = prepare(db, markOutboxSQL);
        start = now();
        writeRows(db, upsert, 1, 0, base, base, perRecord, query, dot, outbox, 100, 0);
        end = now();
    } else if (strcmp(which, "lean-writes") == 0) {
        exec(db, "CREATE TABLE lean_fields (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, kind INTEGER NOT NULL,"
                 " value ANY, hlc INTEGER NOT NULL, replica INTEGER NOT NULL, dirty INTEGER NOT NULL DEFAULT 0,"
                 " PRIMARY KEY (collection, id, field)) STRICT, WITHOUT ROWID");
        sqlite3_stmt *upsert = prepare(db,
            "INSERT INTO lean_fields (collection, id, field, kind, value, hlc, replica, dirty) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            " ON CONFLICT (collection, id, field) DO UPDATE SET kind = ?4, value = ?5, hlc = ?6, replica = ?7, dirty = ?8"
            " WHERE lean_fields.kind < 6");
        sqlite3_stmt *dot = prepare(db, insertDotSQL);
        sqlite3_stmt *outbox = prepare(db,
            "INSERT INTO concord_outbox (collection, id, kind, field, element, hlc) VALUES (?1, ?2, 0, '', x'', ?3)"
            " ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)");
        exec(db, "BEGIN IMMEDIATE");
        start = now();
        for (int record = 0; record < RECORDS; record++) {
            if (record > 0 && record % 100 == 0) { exec(db, "COMMIT"); exec(db, "BEGIN IMMEDIATE"); }
            char id[32];
            snprintf(id, sizeof id, "item%d", record);
            long long stamp = base + record;
            insertDot(dot, id, stamp);
            bindRecord(outbox, id);
            sqlite3_bind_int64(outbox, 3, stamp);
            step(outbox);
            for (int field = 0; field < FIELDS; field++) {
                bindKey(upsert, id, field);
                bindValue(upsert, 5, record, field, 0, 1);
                sqlite3_bind_int64(upsert, 6, stamp);
                sqlite3_bind_int64(upsert, 7, 1);
                sqlite3_bind_int64(upsert, 8, stamp);
                step(upsert);
            }
        }
        exec(db, "COMMIT");
        end = now();
    } else if (strcmp(which, "writes-now") == 0) {
        sqlite3_stmt *query = prepare(db,
            "SELECT kind, hlc, replica FROM concord_dots WHERE collection = ?1 AND id = ?2 UNION ALL"
            " SELECT -1, NULL, NULL WHERE EXISTS (SELECT 1 FROM concord_fields WHERE collection = ?1 AND id = ?2) UNION ALL"
            " SELECT -2, NULL, NULL WHERE EXISTS (SELECT 1 FROM concord_elements WHERE collection = ?1 AND id = ?2)");
        sqlite3_stmt *upsert = prepareBatched(db, 5, 5, writeRow,
            "ON CONFLICT (collection, id, field) DO UPDATE SET kind = excluded.kind, value = excluded.value,"
            " file_size = excluded.file_size, media_type = excluded.media_type, hlc = excluded.hlc,"
            " replica = excluded.replica, dirty = excluded.dirty WHERE concord_fields.versions = 1 AND concord_fields.kind != 6");
        enum { LIVENESS_ROWS = 32 };
        char sql[8192];
        sqlite3_stmt *dots[LIVENESS_ROWS + 1] = {0}, *marks[LIVENESS_ROWS + 1] = {0};
        for (int rows = 1; rows <= LIVENESS_ROWS; rows++) {
            size_t used = (size_t)snprintf(sql, sizeof sql, "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES ");
            for (int row = 0; row < rows; row++)
                used += (size_t)snprintf(sql + used, sizeof sql - used, "%s(?%d, ?%d, 0, ?1, ?2)", row ? ", " : "", 3 + 2 * row, 4 + 2 * row);
            dots[rows] = prepare(db, sql);
            used = (size_t)snprintf(sql, sizeof sql, "INSERT INTO concord_outbox (collection, id, kind, field, element, hlc) VALUES ");
            for (int row = 0; row < rows; row++)
                used += (size_t)snprintf(sql + used, sizeof sql - used, "%s(?%d, ?%d, 0, '', x'', ?1)", row ? ", " : "", 2 + 2 * row, 3 + 2 * row);
            snprintf(sql + used, sizeof sql - used, " ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)");
            marks[rows] = prepare(db, sql);
        }
        char ids[LIVENESS_ROWS][32];
        int pending = 0;
        start = now();
        exec(db, "BEGIN IMMEDIATE");
        for (int record = 0; record < RECORDS; record++) {
            char *id = ids[pending];
            snprintf(id, 32, "item%d", record);
            bindRecord(query, id);
            step(query);
            bindRecord(upsert, id);
            sqlite3_bind_int64(upsert, 3, base);
            sqlite3_bind_blob(upsert, 4, replicaA, 16, SQLITE_STATIC);
            sqlite3_bind_int64(upsert, 5, base);
            for (int field = 0; field < FIELDS; field++) {
                int first = 6 + 5 * field;
                sqlite3_bind_text(upsert, first, names[field], -1, SQLITE_STATIC);
                bindValue(upsert, first + 2, record, field, 0, 1);
            }
            step(upsert);
            pending++;
            int last = record % 100 == 99;
            if (pending == LIVENESS_ROWS || last) {
                sqlite3_stmt *dot = dots[pending], *mark = marks[pending];
                sqlite3_bind_int64(dot, 1, base);
                sqlite3_bind_blob(dot, 2, replicaA, 16, SQLITE_STATIC);
                sqlite3_bind_int64(mark, 1, base);
                for (int row = 0; row < pending; row++) {
                    sqlite3_bind_text(dot, 3 + 2 * row, "items", -1, SQLITE_STATIC);
                    sqlite3_bind_text(dot, 4 + 2 * row, ids[row], -1, SQLITE_TRANSIENT);
                    sqlite3_bind_text(mark, 2 + 2 * row, "items", -1, SQLITE_STATIC);
                    sqlite3_bind_text(mark, 3 + 2 * row, ids[row], -1, SQLITE_TRANSIENT);
                }
                step(dot);
                step(mark);
                pending = 0;
            }
            if (last) {
                exec(db, "COMMIT");
                if (record + 1 < RECORDS) exec(db, "BEGIN IMMEDIATE");
            }
        }
        end = now();
    } else if (strcmp(which, "raw-apply") == 0) {
        sqlite3_stmt *merge = prepare(db, rawMerge);
        writeRows(db, merge, 0, 0, base, 0, 0, 0, 0, 0, 0, 0);
        start = now();
        writeRows(db, merge, 0, 1, base * 2, 0, 0, 0, 0, 0, 0, 0);
        end = now();
    } else if (strncmp(which, "store-apply", 11) == 0) {
        int liveness = strstr(which, "-noliveness") == 0 && strstr(which, "-upserts") == 0;
        int lookup = strstr(which, "-nolookup") == 0 && strstr(which, "-upserts") == 0;
        exec(db, "CREATE TEMP TABLE concord_observed (replica BLOB PRIMARY KEY NOT NULL, hlc INTEGER NOT NULL) WITHOUT ROWID");
        sqlite3_stmt *observed = prepare(db, "INSERT INTO temp.concord_observed (replica, hlc) VALUES (?, ?)");
        sqlite3_bind_blob(observed, 1, replicaA, 16, SQLITE_STATIC);
        sqlite3_bind_int64(observed, 2, base * 2 - 1);
        step(observed);
        sqlite3_stmt *apply = prepare(db, lookup ? storeApply : storeApplyBound);
        sqlite3_stmt *dot = prepare(db, insertDotSQL);
        sqlite3_stmt *removeDots = prepare(db,
            "DELETE FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = 0"
            " AND hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_dots.replica), 0)"
            " RETURNING hlc, replica");
        writeRows(db, apply, 1, 0, base, 0, 0, 0, dot, 0, 0, 0);
        start = now();
        writeRows(db, apply, 1, 1, base * 2, 0, 0, 0, liveness ? dot : 0, 0, 0, liveness ? removeDots : 0);
        end = now();
    } else if (strncmp(which, "batched-", 8) == 0) {
        int apply = strncmp(which, "batched-apply", 13) == 0;
        int upsertsOnly = strstr(which, "-fields") != 0 || strstr(which, "-upserts") != 0;
        sqlite3_stmt *query = prepare(db, livenessQuerySQL);
        sqlite3_stmt *dot = prepare(db, insertDotSQL);
        sqlite3_stmt *outbox = prepare(db, markOutboxSQL);
        if (apply) {
            exec(db, "CREATE TEMP TABLE concord_observed (replica BLOB PRIMARY KEY NOT NULL, hlc INTEGER NOT NULL) WITHOUT ROWID");
            sqlite3_stmt *observed = prepare(db, "INSERT INTO temp.concord_observed (replica, hlc) VALUES (?, ?)");
            sqlite3_bind_blob(observed, 1, replicaA, 16, SQLITE_STATIC);
            sqlite3_bind_int64(observed, 2, base * 2 - 1);
            step(observed);
            sqlite3_stmt *upsert = prepareBatched(db, 3, 4, applyRow,
                "ON CONFLICT (collection, id, field) DO UPDATE SET kind = excluded.kind, value = excluded.value, file_size = NULL,"
                " media_type = NULL, hlc = excluded.hlc, replica = excluded.replica"
                " WHERE concord_fields.versions = 1 AND concord_fields.kind != 6"
                " AND concord_fields.hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_fields.replica), 0)");
            sqlite3_stmt *removeDots = prepare(db,
                "DELETE FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = 0"
                " AND hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_dots.replica), 0)"
                " AND (hlc, replica) NOT IN (VALUES (?3, ?4))");
            batchedRecords(db, upsert, 1, 0, base, 0, 0, dot, 0, 0);
            start = now();
            batchedRecords(db, upsert, 1, 1, base * 2, 0, 0, upsertsOnly ? 0 : dot, 0, upsertsOnly ? 0 : removeDots);
            end = now();
        } else {
            sqlite3_stmt *upsert = prepareBatched(db, 5, 5, writeRow,
                "ON CONFLICT (collection, id, field) DO UPDATE SET kind = excluded.kind, value = excluded.value,"
                " file_size = excluded.file_size, media_type = excluded.media_type, hlc = excluded.hlc,"
                " replica = excluded.replica, dirty = excluded.dirty WHERE concord_fields.versions = 1 AND concord_fields.kind != 6");
            start = now();
            if (upsertsOnly) batchedRecords(db, upsert, 0, 0, base, 100, 0, 0, 0, 0);
            else batchedRecords(db, upsert, 0, 0, base, 100, strstr(which, "-noquery") ? 0 : query, dot, outbox, 0);
            end = now();
        }
    } else {
        fprintf(stderr, "unknown case %s\n", which);
        return 2;
    }
    printf("%s %.1f ms\n", which, (end - start) * 1000);
    sqlite3_close(db);
    char other[600];
    unlink(path);
    snprintf(other, sizeof other, "%s-wal", path);
    unlink(other);
    snprintf(other, sizeof other, "%s-shm", path);
    unlink(other);
    return 0;
}
