/*
 * concord.pml -- Spin model of Concord's remote protocol (docs/ARCHITECTURE.md section 4).
 * Run it with check.sh; README.md explains the bounds, properties and results.
 *
 * WHAT IS MODELLED
 *   Three replicas sync through "dumb storage" that offers only: put a whole
 *   object, get it, list a prefix, delete it.  Every remote operation is one
 *   atomic Promela step; a crash can happen between any two steps of a
 *   multi-step operation, and a crash *during* a put leaves a torn object
 *   (fails authentication, so readers treat it as "not there yet").
 *
 *   Remote layout (docs/ARCHITECTURE.md 4)      model variables
 *     replicas/<o>/deltas/<s>        bat[B(o,s)]   ABS | TORN | OK, fresh bit bfr
 *     heads/<o>-<s>                  hd[o]         bitmask of the seqs s with a head
 *     snapshots/<w>-<s>              snap[B(w,s)]  status; svv = version vector;
 *                                                  fresh bit sfr
 *     blobs/<2 hex>/<keyed hash>     blob[BL(o,k)] status; bage = object age
 *
 * DATA ABSTRACTION
 *   A write is the token (origin o, local counter k), k = 1..WMAX(o).  Write
 *   (o,k) sets the file field of o's record to a new blob b(o,k), so it
 *   supersedes (o,k-1): the old blob becomes garbage once nothing references
 *   it, which is what gives blob collection real work to do.  A replica's
 *   state is its version vector vv[r][o] = how many of o's writes it holds:
 *   batches of one origin are applied in seq order, and a batch only after
 *   the batches it depends on, so the vector is an exact summary of the state
 *   (docs/ARCHITECTURE.md 2, "Causality").  Batch (o,s) holds writes hi[o][s-1]+1 ..
 *   hi[o][s]; the outbox tracks changed fields, so it references only the
 *   newest blob b(o, hi[o][s]).  A snapshot with vector v references
 *   b(o, v[o]) for every v[o] > 0.
 *
 * TIME
 *   Process Clock ticks.  A tick ages every blob (ages saturate at GRACE:
 *   that is all the protocol can observe) and ends the "fresh" period of
 *   every object written since the previous tick.
 *     - Listings are stale: a listing may omit any fresh object.  The
 *       collector always assumes the worst (it never sees fresh objects).
 *       For a pull or join, missing an object is the same as acting later,
 *       which the interleavings already cover.
 *     - An upload attempt (push, snapshot) must put its batch/snapshot in
 *       the same tick as the blobs it (re-)uploaded (DEADLINE = 1 tick),
 *       otherwise it restarts from the blob upload: the implementation's
 *       attempt timeout.  Safety needs DEADLINE + staleness (1) <= GRACE (2).
 *     - A tick that overtakes an upload attempt in flight is a "slow" fault.
 *
 * FAULTS
 *   A budget FAULTS (default 2) bounds crashes, torn puts and slow ticks;
 *   once it is spent, faults have stopped for good.  Torn *reads* and stale
 *   listings are not budgeted: they make the reader do nothing this time,
 *   which is the same as the reader not being scheduled, and every schedule
 *   is explored.  Idle polls (steps that change nothing) are left out: every
 *   step is enabled only when it changes the state, so every run is finite
 *   -- check.sh --extended proves it with a non-progress-cycle search
 *   (there are no progress labels, so ANY cycle would be reported).
 *
 * PROPERTIES  (asserted by check() after every step, i.e. in every state)
 *   p1_durable      every write of a batch whose head has landed is held by a
 *                   remote batch or snapshot that exists (intact, or torn and
 *                   going to be re-put by its writer, who keeps the bytes).
 *   p1_own_kept     a replica never loses its own writes (a join keeps them).
 *   p2_batch_blob   no batch on the remote references a deleted blob.
 *   p2_snap_blob    no snapshot on the remote references a deleted blob.
 *   p2_attempt_blob a blob (re-)uploaded by an attempt still within its
 *                   deadline, for a batch/snapshot not yet on the remote, is
 *                   never deleted.
 *   p2_fallback     (asserted in the pull) when the blob of a fetched batch is
 *                   gone, a snapshot that holds those writes exists.
 *   p0_causal       every replica's state is causally closed.
 *   p0_torn_pending every torn object has a writer that will re-put it.
 *   p0_seq_order    (asserted in the pull) batches of one origin are applied
 *                   in seq order.
 *   conv -> delivered (asserted) so p3_converged implies p1_delivered.
 *   p3 (Finale)     in every terminal state -- no process can move: every
 *                   write made and pushed, faults over, nothing left to pull,
 *                   join, compact or collect -- all replicas hold all writes.
 *   LTL (-DLTL)     p1_delivered  <>[] every landed write is on every replica
 *                   p3_converged  <>[] all replicas equal and complete
 *
 * ROLLBACK (-DROLLBACK, configuration E)
 *   The storage goes back in time: a process Storage may, within a budget
 *   RFAULTS, lose any batch, any replica's heads or any snapshot, or put
 *   back a copy of the whole remote taken at any earlier moment (blobs
 *   included).  Every replica checks that the remote still holds what it
 *   knows was there and publishes it again from local state: its own
 *   batches (the bytes it sealed) that no snapshot covers, the blobs of its
 *   batches still there, and its head.
 *   The collector's invariants (p1_durable, p2_*) do not survive a fault
 *   that deletes objects, so they are checked in A-D; here the properties
 *   are p1_own_kept, p0_causal and convergence once the faults stop.
 *   MUTANT_NO_REPUBLISH skips the check and must fail.
 *
 * RESTORE (-DRESTORE, configuration F)
 *   A device goes back in time: replica 0's local state may, once, revert
 *   to a backup taken right after one of its syncs (everything pushed),
 *   at any moment, even in the middle of a push.  The copy does not know
 *   it is one: it finds out from what its syncs read, by the steps the
 *   Swift sync takes -- a head of its id past what it sealed (sync start,
 *   and the push's own listing), an authentic batch of its id past it (the
 *   periodic listing), the name of its next batch holding other bytes
 *   (push), another replica's batch depending on writes of its id it never
 *   made (pull), and with ROLLBACK the ownLoss rule.  Then it announces the
 *   batches its lost store uploaded but no head named, and continues under
 *   a new id: replica slot 2, dormant until then, starts from the copy's
 *   state and pulls the old id's history like another replica's.  The old
 *   id never writes again.
 *   Properties: p4_one_content (a batch name that ever held authentic
 *   bytes is never put again with other contents), p1_own_kept,
 *   p0_causal, p1_durable, the collector's invariants, and convergence of
 *   the live replicas to every write that survives (held by a live
 *   replica, or in an authentic batch or snapshot on the remote).
 *   MUTANT_NO_RESTORE_CHECK (the copy ignores what it reads and carries on
 *   under its id) and MUTANT_NO_ORPHANS (unannounced batches are left)
 *   must fail.
 *
 * FILE IDENTITY (-DFILE_IDENTITY, with RESTORE; configuration H)
 *   The store records its file's identity (inode, birth time), and a store
 *   restored as a new file tells it is a copy at its next sync, whatever
 *   the remote shows: it continues under a new id first.  With it, the
 *   restore and the remote's copy may be taken at any moment (the gap of
 *   configuration G below closes): p4_one_content and the rest hold.
 *
 * RESTORE AND ROLLBACK (-DRESTORE -DROLLBACK, configuration G)
 *   Both in one run.  A sync republishes a lost own head (and the own
 *   batches the remote lost) before it pushes; a store whose newest head
 *   the remote lost, having sealed nothing past it, records it (ownLoss)
 *   and continues under a new id at its next write.  MUTANT_NO_OWNLOSS
 *   must fail (p4_one_content).  With the remote's copy and the device's
 *   backup taken at the same point the copy can observe nothing: a known
 *   gap (README), which check.sh --extended requires to fail.
 *
 * DEVIATIONS FROM / ADDITIONS TO docs/ARCHITECTURE.md 4 (each is needed; see README)
 *   - a snapshot (re-)uploads the blobs it references before itself;
 *   - a snapshot holds only pushed state and each snapshot name is written
 *     with one set of bytes (sealed locally, re-put identically);
 *   - upload attempts have a deadline shorter than the blob grace period
 *     minus the listing staleness bound.
 */

/* ------------------------------------------------------------------ bounds */
#define NR 3                 /* replicas                                      */
#ifndef W0
#define W0 2                 /* writes by replica 0                           */
#endif
#ifndef W1
#define W1 1                 /* writes by replica 1                           */
#endif
#ifndef W2
#define W2 0                 /* writes by replica 2 (default: a pure reader)  */
#endif
#define WMAX(r) ((r) == 0 -> W0 : ((r) == 1 -> W1 : W2))
#define NS 4                 /* seq slots per replica: 0..2 used, 3 sentinel  */
#define NB 3                 /* blob slots per origin: k = 1..2               */
#ifndef FAULTS
#define FAULTS 2             /* crash / torn put / slow tick budget           */
#endif
#ifndef SNAPPERS
#define SNAPPERS 2           /* bitmask of replicas that write snapshots      */
#endif
#ifndef GRACE
#define GRACE 2              /* blob collection grace (ticks of object age)   */
#endif

/* object status */
#define ABS  0               /* absent: never written, or deleted             */
#define TORN 1               /* partially written: fails authentication       */
#define OK   2               /* complete and authentic                        */

/* what the replica's single sync actor is doing (volatile) */
#define IDLE    0
#define PUSH    1
#define PULL    2
#define JOIN    3
#define SNAP    4
#define GONE    5   /* RESTORE: an id that never acts again (or not yet: slot 2)        */

/* Non-vacuity probes: with -DREACH=n the model asserts that probe n is
 * never reached, so a violation proves the event happens (check.sh
 * --vacuity).  Without -DREACH they compile to nothing.
 *    1 the collector deletes a blob        2 compaction deletes a batch
 *    3 a fetched batch's blob is gone      4 a replica joins a snapshot
 *    5 ... while its own batch is unpushed 6 a torn batch (crash mid-put)
 *    7 a torn snapshot                     8 a push attempt misses its deadline
 *    9 a pull holds a batch back (torn blob)
 *   10 keep-newest-two deletes a snapshot (config B)
 *   11 a batch waits for its dependencies  12 a join replaces a compacted batch
 *   13 compaction deletes a batch some replica has not applied
 *   14 a lagging replica writes a snapshot 15 a torn blob
 *   16 a slow tick overtakes an upload     17 a terminal state after 2 faults
 *   18 a replica drops its own snapshot for another replica's (config D)
 *   19 a lost batch is published again (E)   20 the remote goes back (E)
 *   21 a lost blob of a batch still there is uploaded again (E)
 *   22 a device is restored from a backup (F)
 *   23 its copy announces a batch its lost store never announced (F)
 *   24 the copy continues under a new id (F)
 *   25 a store continues under a new id by the ownLoss rule (G) */
#ifdef REACH
#define REACHED(n) assert(REACH != (n))
#else
#define REACHED(n) skip
#endif

/* ------------------------------------------------------------ index maps */
#define B(o,s)      ((o)*NS+(s))            /* batch, head, snapshot, hi     */
#define V(r,o)      ((r)*NR+(o))            /* vv, hv                        */
#define SV(sl,o)    ((sl)*NR+(o))           /* svv of snapshot slot sl       */
#define DP(o,s,p)   (((o)*NS+(s))*NR+(p))   /* dependency vector of a batch  */
#define BL(o,k)     ((o)*NB+(k))            /* blob b(o,k)                   */

/* ------------------------------------------------- replica state (local) */
byte nw[NR];          /* writes made (acknowledged local transactions)         */
byte lastSeq[NR];     /* last sealed seq (durable: sealed bytes kept locally)  */
byte pushed[NR];      /* last seq whose push completed (durable)               */
byte hi[NR*NS];       /* sealed batch contents: hi[B(o,s)]; hi[B(o,0)] = 0     */
byte dep[NR*NS*NR];   /* sealed batch dependency vectors                       */
byte vv[NR*NR];       /* applied version vector; vv[V(r,r)] == nw[r]           */
byte sused[NR];       /* own snapshot names already sealed (bitmask of seqs)   */
byte spn[NR];         /* sealed snapshot not yet completed: its seq + 1, or 0  */
byte mode[NR];        /* volatile: current operation                           */
byte stage[NR];       /* volatile: step within a push (1 = blob uploaded)      */
bit  late[NR];        /* volatile: a tick passed since this attempt uploaded
                         its blobs (attempt deadline exceeded)                */
byte hO[NR], hS[NR];  /* volatile: the batch a pull fetched and holds          */
#ifdef JOIN_TWO_STEP
byte hv[NR*NR];       /* volatile: the snapshot vector a join read             */
#else
hidden byte hv[NR*NR];/* scratch: a one-step join needs no state for it        */
#endif

/* ---------------------------------------------------------- remote state */
byte bat[NR*NS];  bit bfr[NR*NS];
byte hd[NR];
byte snap[NR*NS]; bit sfr[NR*NS]; byte svv[NR*NS*NR];
byte blob[NR*NB]; byte bage[NR*NB];
bit  anyfresh;        /* some object was written since the last tick          */

#ifdef RESTORE
/* the remote's view of an origin's batches outlives its writer's local
 * state: pull and the checks bound seqs by the greatest ever sealed */
byte top[NR];
#define SEQTOP(o) top[o]
bit  gen0;            /* replica 0's store is the restored copy                */
bit  sgen[NR*NS];     /* ghost: the generation whose contents hi/dep now hold  */
bit  bput[NR*NS];     /* ghost: the name was put complete (authentic) once ... */
bit  bgen[NR*NS];     /* ... by that generation                               */
bit  bsaved; bit restored; bit adopted;
byte bk_nw, bk_last, bk_sused; byte bk_vv[NR];   /* replica 0's backup         */
bit  ownLoss0;        /* replica 0's store recorded that the remote lost the
                         head of its newest batch, and it sealed nothing past it */
bit  bk_ownLoss;      /* ... as the backup holds it                            */
#define GEN(r) ((r) == 0 -> gen0 : 0)
#define LIVE(r) (mode[r] != GONE)
/* what survives of origin o: held by a live replica, in an authentic batch
 * or a snapshot on the remote (computed by check() into cw[]) */
hidden byte cw[NR];
#define WANT(o) cw[o]
#else
#define SEQTOP(o) lastSeq[o]
#define LIVE(r) 1
#define WANT(o) WMAX(o)
#endif

/* ---------------------------------------------------- ghosts / properties */
byte landed[NR];      /* highest seq whose head has been put (monotone)       */
byte faults = FAULTS; /* fault budget left                                    */
bit  conv;            /* every replica holds every write                      */
bit  delivered = 1;   /* every write of a landed batch is on every replica    */

/* scratch for the checks: hidden = not part of the state vector */
hidden byte ci, cj, ck, cl, hcov;
hidden byte p1_durable, p1_own_kept, p2_batch_blob, p2_snap_blob,
            p2_attempt_blob, p2_fallback, p0_causal, p0_torn_pending;

/* ====================================================================== */
/* Invariants, asserted at the end of every step (so in every state).     */
/* ====================================================================== */

/* a snapshot slot that a reader can use now, or after its writer's pending
 * re-put (a torn snapshot is always pending: p0_torn_pending) */
#define SNAP_THERE(sl)  (snap[sl] != ABS)

/* res := some snapshot on the remote holds o's writes 1..n */
inline snap_covers(o, n, res) {
  res = 0;
  for (cl : 0 .. NR*NS-1) {
    if
    :: SNAP_THERE(cl) && svv[SV(cl,o)] >= n -> res = 1
    :: else -> skip
    fi
  }
}

/* the slot of the snapshot replica r has sealed and is uploading */
#define PSLOT(r) B(r, spn[r]-1)

inline check() {
#ifndef LIVE_ONLY   /* liveness runs: same states, assertions checked elsewhere */
#ifndef ROLLBACK    /* a storage fault deletes objects: these hold in A-D only */
  /* p1_durable: every write of every landed batch is on the remote */
  for (ci : 0 .. NR-1) {
    cj = 1;
    do
    :: cj <= landed[ci] ->
       snap_covers(ci, hi[B(ci,cj)], p1_durable);
       p1_durable = (p1_durable || bat[B(ci,cj)] != ABS);
       assert(p1_durable);
       cj++
    :: else -> break
    od
  }
  /* p2_batch_blob: no batch on the remote references a deleted blob */
  for (ci : 0 .. NR-1) {
    cj = 1;
    do
    :: cj <= SEQTOP(ci) ->
       p2_batch_blob = (bat[B(ci,cj)] == ABS || blob[BL(ci, hi[B(ci,cj)])] != ABS);
       assert(p2_batch_blob);
       cj++
    :: else -> break
    od
  }
  /* p2_snap_blob: no snapshot on the remote references a deleted blob */
  for (ci : 0 .. NR*NS-1) {
    if
    :: snap[ci] != ABS ->
       for (cj : 0 .. NR-1) {
         p2_snap_blob = (svv[SV(ci,cj)] == 0 || blob[BL(cj, svv[SV(ci,cj)])] != ABS);
         assert(p2_snap_blob)
       }
    :: else -> skip
    fi
  }
  /* p2_attempt_blob: blobs uploaded by an attempt within its deadline, for a
   * batch/snapshot that is sealed but not yet on the remote, stay */
  for (ci : 0 .. NR-1) {
    if
    :: mode[ci] == PUSH && stage[ci] == 1 && !late[ci] ->
       p2_attempt_blob = (blob[BL(ci, hi[B(ci,lastSeq[ci])])] != ABS);
       assert(p2_attempt_blob)
    :: mode[ci] == SNAP && !late[ci] ->
       for (cj : 0 .. NR-1) {
         p2_attempt_blob = (svv[SV(PSLOT(ci),cj)] == 0
                            || blob[BL(cj, svv[SV(PSLOT(ci),cj)])] != ABS);
         assert(p2_attempt_blob)
       }
    :: else -> skip
    fi
  }
#endif /* ROLLBACK */
  /* p1_own_kept and p0_causal */
  for (ci : 0 .. NR-1) {
    p1_own_kept = (vv[V(ci,ci)] == nw[ci]);
    assert(p1_own_kept);
    for (cj : 0 .. NR-1) {            /* origin cj, its applied batches ck */
      ck = 1;
      do
      :: cj != ci && ck <= SEQTOP(cj) && hi[B(cj,ck)] <= vv[V(ci,cj)] ->
         for (cl : 0 .. NR-1) {
           p0_causal = (vv[V(ci,cl)] >= dep[DP(cj,ck,cl)]);
           assert(p0_causal)
         }
         ck++
      :: else -> break
      od
    }
  }
  /* p0_torn_pending: every torn batch/snapshot will be re-put by its writer */
  for (ci : 0 .. NR-1) {
    for (cj : 0 .. NS-1) {
      p0_torn_pending = ((bat[B(ci,cj)] != TORN || pushed[ci] < cj)
                      && (snap[B(ci,cj)] != TORN || spn[ci] == cj+1));
      assert(p0_torn_pending)
    }
  }
#endif
#ifdef REACH
  probes();
#endif
#ifdef RESTORE
  /* the writes that survive: held by a live replica, or in an authentic
   * batch or snapshot on the remote (the lost store's others are gone) */
  for (cj : 0 .. NR-1) {
    cw[cj] = 0;
    for (ci : 0 .. NR-1) {
      if :: LIVE(ci) && vv[V(ci,cj)] > cw[cj] -> cw[cj] = vv[V(ci,cj)] :: else -> skip fi
    }
    for (ci : 1 .. NS-1) {
      if :: bat[B(cj,ci)] == OK && hi[B(cj,ci)] > cw[cj] -> cw[cj] = hi[B(cj,ci)] :: else -> skip fi
    }
    for (ci : 0 .. NR*NS-1) {
      if :: snap[ci] == OK && svv[SV(ci,cj)] > cw[cj] -> cw[cj] = svv[SV(ci,cj)] :: else -> skip fi
    }
  }
#endif
  /* ghosts for the LTL formulas and the final check: over the live replicas */
  conv = 1; delivered = 1;
  for (ci : 0 .. NR-1) {
    if
    :: LIVE(ci) ->
       for (cj : 0 .. NR-1) {
         conv = (conv && vv[V(ci,cj)] == WANT(cj));
         delivered = (delivered && vv[V(ci,cj)] >= hi[B(cj,landed[cj])])
       }
    :: else -> skip
    fi
  }
  /* conv implies delivered, so p3_converged implies p1_delivered (a
   * storage fault may take a landed batch away together with every copy,
   * with a restored device: not asserted then) */
#if !(defined(RESTORE) && defined(ROLLBACK))
  assert(!conv || delivered);
#endif
  ci = 0; cj = 0; ck = 0; cl = 0
}

/* ====================================================================== */
/* PUSH (docs/ARCHITECTURE.md 4): seal the outbox into a batch (stored locally) ->   */
/* upload its blob -> upload the batch -> upload the head -> delete the   */
/* older heads.  After a crash the sealed bytes are re-uploaded.          */
/*                                                                        */
/* Steps whose intermediate states no other process can observe are      */
/* fused on the fault-free path (sealing is local; between the batch and  */
/* the head, or the head and the old heads' deletion, nobody can act on   */
/* the difference), but a crash is still possible at every cut point:    */
/* each cut has its own fault branch.  The window between the blob and    */
/* the batch upload IS observable (collector, clock) and is a real step.  */
/* ====================================================================== */
#define CUR_BLOB(r)   BL(r, hi[B(r,lastSeq[r])])
#define CUR_BATCH(r)  B(r,lastSeq[r])

inline seal(r) {
  lastSeq[r]++;
  hi[B(r,lastSeq[r])] = nw[r];
#ifdef RESTORE
  sgen[B(r,lastSeq[r])] = GEN(r);
  if :: lastSeq[r] > top[r] -> top[r] = lastSeq[r] :: else -> skip fi;
#endif
  for (ci : 0 .. NR-1) {
    if
    :: ci == r -> dep[DP(r,lastSeq[r],ci)] = 0
    :: else    -> dep[DP(r,lastSeq[r],ci)] = vv[V(r,ci)]
    fi
  }
  mode[r] = PUSH
}
inline put_blob(r)       { blob[CUR_BLOB(r)] = OK;   bage[CUR_BLOB(r)] = 0; late[r] = 0 }
inline put_blob_torn(r)  { blob[CUR_BLOB(r)] = TORN; bage[CUR_BLOB(r)] = 0 }
#ifdef RESTORE
/* p4_one_content: a batch name that ever held authentic bytes is never put
 * (whole or torn) with other contents: those of another generation of the
 * store.  Asserted at every put of a batch. */
hidden byte p4_one_content;
#define one_content(i, g) p4_one_content = (!bput[i] || bgen[i] == (g)); assert(p4_one_content)
inline put_batch(r)      { one_content(CUR_BATCH(r), sgen[CUR_BATCH(r)]);
                           bat[CUR_BATCH(r)] = OK;   bfr[CUR_BATCH(r)] = 1; anyfresh = 1;
                           if :: !bput[CUR_BATCH(r)] -> bput[CUR_BATCH(r)] = 1; bgen[CUR_BATCH(r)] = sgen[CUR_BATCH(r)]
                              :: else -> skip fi }
inline put_batch_torn(r) { one_content(CUR_BATCH(r), sgen[CUR_BATCH(r)]);
                           bat[CUR_BATCH(r)] = TORN; bfr[CUR_BATCH(r)] = 1; anyfresh = 1 }
#else
inline put_batch(r)      { bat[CUR_BATCH(r)] = OK;   bfr[CUR_BATCH(r)] = 1; anyfresh = 1 }
inline put_batch_torn(r) { bat[CUR_BATCH(r)] = TORN; bfr[CUR_BATCH(r)] = 1; anyfresh = 1 }
#endif
inline put_head(r)       { hd[r] = hd[r] | (1 << lastSeq[r]); landed[r] = lastSeq[r] }
/* delete the older heads, record the push as complete */
inline push_done(r)      { hd[r] = (1 << lastSeq[r]); pushed[r] = lastSeq[r];
                           mode[r] = IDLE; stage[r] = 0 }
inline crash(r)          { mode[r] = IDLE; stage[r] = 0; late[r] = 0; faults-- }

/* the first upload of a push attempt (a MUTANT uploads the batch first) */
#ifdef MUTANT_BATCH_BEFORE_BLOBS
#define first_upload(r) put_batch(r)
#else
#define first_upload(r) put_blob(r)
#endif

/* attempt deadline: no tick since the attempt uploaded its blobs */
#ifdef MUTANT_NO_DEADLINE
#define IN_TIME(r) 1
#else
#define IN_TIME(r) (!late[r])
#endif

/* ====================================================================== */
/* PULL (docs/ARCHITECTURE.md 4): list heads/, fetch the batches past the local      */
/* version vector, verify, order causally, fetch referenced blobs, apply. */
/* ====================================================================== */
/* next seq of origin o that replica r needs (its vv[o] is a batch boundary) */
#define NXT(r,o) (vv[V(r,o)] == 0 -> 1 : (vv[V(r,o)] == hi[B(o,1)] -> 2 : 3))
#define O1(r) (((r)+1)%NR)
#define O2(r) (((r)+2)%NR)
#ifdef MUTANT_NO_CAUSAL
#define DEPOK(r,o,s) 1
#else
#define DEPOK(r,o,s) (vv[V(r,0)] >= dep[DP(o,s,0)] && vv[V(r,1)] >= dep[DP(o,s,1)] \
                      && vv[V(r,2)] >= dep[DP(o,s,2)])
#endif
/* heads/ lists a head of o naming a seq >= the next one, that batch is
 * there and authenticates, and the batches it depends on are applied */
#define PULLABLE_NODEP(r,o) (NXT(r,o) <= SEQTOP(o) && (hd[o] >> NXT(r,o)) != 0 \
                             && bat[B(o,NXT(r,o))] == OK)
#define PULLABLE(r,o) (PULLABLE_NODEP(r,o) && DEPOK(r,o,NXT(r,o)))
#define HELD_BLOB(r)  blob[BL(hO[r], hi[B(hO[r],hS[r])])]
#ifdef ROLLBACK
/* after a rollback a lost blob comes back (its writer uploads it again):
 * the batch is held back, as for a torn blob, unless a snapshot holds its
 * writes (then the blob was collected, and the reader joins the snapshot) */
#define GONE_FOR_GOOD(r) COVERED(hO[r], hi[B(hO[r],hS[r])])
#else
#define GONE_FOR_GOOD(r) 1
#endif

/* ====================================================================== */
/* BOOTSTRAP / JOIN (docs/ARCHITECTURE.md 4): read a snapshot, fetch the blobs it    */
/* references that are new here, join it (a max: own writes are kept).   */
/* A new, lagging or returning replica does this; the model lets any      */
/* replica join any snapshot that has something new for it.              */
/* ====================================================================== */
#define NEWINFO(r,sl) (svv[SV(sl,0)] > vv[V(r,0)] || svv[SV(sl,1)] > vv[V(r,1)] \
                       || svv[SV(sl,2)] > vv[V(r,2)])
#define JOINABLE(r,sl) (snap[sl] == OK && NEWINFO(r,sl) && svv[SV(sl,r)] <= nw[r])
#define NB_OK(r,o)  (hv[V(r,o)] <= vv[V(r,o)] || blob[BL(o,hv[V(r,o)])] == OK)
#define NB_ABS(r,o) (hv[V(r,o)] >  vv[V(r,o)] && blob[BL(o,hv[V(r,o)])] == ABS)
#define JOIN_READY(r) (NB_OK(r,0) && NB_OK(r,1) && NB_OK(r,2))
#define JOIN_FAIL(r)  (NB_ABS(r,0) || NB_ABS(r,1) || NB_ABS(r,2))

/* a batch r needs is named by a head but was deleted (compacted) */
#define MISSING(r,o) (NXT(r,o) <= SEQTOP(o) && (hd[o] >> NXT(r,o)) != 0 \
                      && bat[B(o,NXT(r,o))] == ABS)
#define NBS_OK(r,sl,o) (svv[SV(sl,o)] <= vv[V(r,o)] || blob[BL(o,svv[SV(sl,o)])] == OK)
#define JOIN1(r,sl) (JOINABLE(r,sl) && NBS_OK(r,sl,0) && NBS_OK(r,sl,1) && NBS_OK(r,sl,2))

inline read_snap(r, sl) {
  hv[V(r,0)] = svv[SV(sl,0)]; hv[V(r,1)] = svv[SV(sl,1)]; hv[V(r,2)] = svv[SV(sl,2)];
  mode[r] = JOIN
}
/* join (max) the snapshot vector held in hv; own unpushed writes are kept */
inline do_join(r) {
  REACHED(4);                                          /* 4: a join       */
  if :: pushed[r] < lastSeq[r] -> REACHED(5) :: else -> skip fi;  /* 5: with own unpushed batch */
  if :: MISSING(r,O1(r)) || MISSING(r,O2(r)) -> REACHED(12) :: else -> skip fi; /* 12: batch compacted */
  for (ci : 0 .. NR-1) {
#ifdef MUTANT_JOIN_OVERWRITE
    vv[V(r,ci)] = hv[V(r,ci)];                 /* MUTANT: replace, not join */
#else
    if
    :: hv[V(r,ci)] > vv[V(r,ci)] -> vv[V(r,ci)] = hv[V(r,ci)]
    :: else -> skip
    fi;
#endif
    hv[V(r,ci)] = 0
  }
  mode[r] = IDLE
}

/* ====================================================================== */
/* SNAPSHOT (docs/ARCHITECTURE.md 4, Compaction): snapshots/<w>-<seq>, the writer's  */
/* full state and version vector; it keeps its newest two.                */
/*  - taken when everything is pushed (its own writes are in batches);    */
/*  - each name is sealed once: bytes kept locally, re-put identically    */
/*    after a crash (like a batch), never overwritten with other bytes;   */
/*  - like a push, it first (re-)uploads the blobs it references, then    */
/*    the snapshot within the attempt deadline.  docs/ARCHITECTURE.md does not say   */
/*    this; without it a new reference to an OLD blob appears that the    */
/*    age-based grace does not protect (MUTANT_SNAP_NO_REPUT): a lagging  */
/*    replica's snapshot can name a superseded version whose blob was     */
/*    already collected, and a fresh snapshot missing from a stale        */
/*    listing lets its blob be collected once compaction removed the      */
/*    batch that referenced it.                                           */
/* ====================================================================== */
#define CAN_SNAP(r) ((SNAPPERS & (1 << (r))) != 0 && pushed[r] == lastSeq[r] && nw[r] == hi[B(r,lastSeq[r])] \
                     && spn[r] == 0 && (sused[r] & (1 << lastSeq[r])) == 0   \
                     && vv[V(r,0)] + vv[V(r,1)] + vv[V(r,2)] > 0)
#define LAGGING(r) (vv[V(r,0)] < hi[B(0,landed[0])] || vv[V(r,1)] < hi[B(1,landed[1])] \
                    || vv[V(r,2)] < hi[B(2,landed[2])])
inline seal_snap(r) {
  /* 14: a lagging replica snapshots a superseded version */
  if :: LAGGING(r) -> REACHED(14) :: else -> skip fi;
  sused[r] = sused[r] | (1 << lastSeq[r]);
  spn[r] = lastSeq[r] + 1;
  svv[SV(PSLOT(r),0)] = vv[V(r,0)];
  svv[SV(PSLOT(r),1)] = vv[V(r,1)];
  svv[SV(PSLOT(r),2)] = vv[V(r,2)]
}
inline put_snap_blobs(r) {
#ifndef MUTANT_SNAP_NO_REPUT
  for (ci : 0 .. NR-1) {
    if
    :: svv[SV(PSLOT(r),ci)] > 0 ->
       blob[BL(ci, svv[SV(PSLOT(r),ci)])] = OK; bage[BL(ci, svv[SV(PSLOT(r),ci)])] = 0
    :: else -> skip
    fi
  }
#endif
  late[r] = 0
}
inline put_snap(r) { snap[PSLOT(r)] = OK; sfr[PSLOT(r)] = 1; anyfresh = 1 }
/* record the snapshot as complete; delete own snapshots that have two newer
 * completed ones (keep the newest two) */
inline snap_done(r) {
  spn[r] = 0;
  for (ci : 0 .. NS-1) {
    ck = 0;
    for (cj : ci+1 .. NS-1) {
      if :: snap[B(r,cj)] == OK -> ck++ :: else -> skip fi
    }
    if :: ck >= 2 && snap[B(r,ci)] != ABS -> snap[B(r,ci)] = ABS; sfr[B(r,ci)] = 0; REACHED(10)
       :: else -> skip fi
  }
  mode[r] = IDLE
}

/* ====================================================================== */
/* COMPACTION (docs/ARCHITECTURE.md 4): a replica deletes its own batches that a     */
/* snapshot covers.  The extra condition "every active replica has        */
/* applied it (per their heads), or it is older than the grace period"    */
/* is over-approximated as always true: a covered batch may be deleted at */
/* any moment, which includes every timing the real rule allows (and      */
/* makes heads' manifests and retirement irrelevant to safety).  Any      */
/* authentic snapshot counts, even one so fresh that listings may miss    */
/* it: its blobs were just re-uploaded, so none can be collected before   */
/* every listing shows it.                                                */
/* ====================================================================== */
#define OWN_DELETABLE(r,c) ((1 <= pushed[r] && bat[B(r,1)] != ABS && hi[B(r,1)] <= (c)) \
                         || (2 <= pushed[r] && bat[B(r,2)] != ABS && hi[B(r,2)] <= (c)))
#define AUTHENTIC(sl) (snap[sl] == OK)     /* read and authenticated */
#define UNAPPLIED(r,t) (vv[V(O1(r),r)] < hi[B(r,t)] || vv[V(O2(r),r)] < hi[B(r,t)])
#define COVERS(r,sl) (AUTHENTIC(sl) && OWN_DELETABLE(r, svv[SV(sl,r)]))
#if defined(MUTANT_COMPACT_UNSAFE)
#define CAN_COMPACT(r) OWN_DELETABLE(r, WMAX(r))
#elif defined(MUTANT_COMPACT_ALL_APPLIED)
/* MUTANT: no snapshot needed once every replica has applied the batch */
#define APPLIED_BY_ALL(r) (vv[V(O1(r),r)] < vv[V(O2(r),r)] -> vv[V(O1(r),r)] : vv[V(O2(r),r)])
#define CAN_COMPACT(r) OWN_DELETABLE(r, APPLIED_BY_ALL(r))
#else
#define CAN_COMPACT(r) (COVERS(r,0) || COVERS(r,1) || COVERS(r,2) || COVERS(r,4) \
                     || COVERS(r,5) || COVERS(r,6) || COVERS(r,8) || COVERS(r,9)    \
                     || COVERS(r,10))
#endif

/* ====================================================================== */
/* DROP (docs/ARCHITECTURE.md 4, shared snapshots): a replica deletes its own        */
/* snapshot that another one supersedes -- authentic, settled (every      */
/* listing shows it: not fresh), covering at least as much of every       */
/* origin, and more of one or, covering the same, with the greater slot   */
/* (the greater name).  A strict order, so no two snapshots ever delete   */
/* each other, and the batches compacted because of the dropped one stay */
/* covered.  A snapshot its writer is still uploading is never dropped.   */
/* ====================================================================== */
#define SGEQ(a,b) (svv[SV(a,0)] >= svv[SV(b,0)] && svv[SV(a,1)] >= svv[SV(b,1)] \
                   && svv[SV(a,2)] >= svv[SV(b,2)])
#define SGT(a,b)  (svv[SV(a,0)] > svv[SV(b,0)] || svv[SV(a,1)] > svv[SV(b,1)] \
                   || svv[SV(a,2)] > svv[SV(b,2)])
#ifdef MUTANT_DROP_UNCOVERED
/* MUTANT: drop for any settled snapshot, whatever it covers */
#define SUPERSEDES(a,b) ((a) != (b) && snap[a] == OK && sfr[a] == 0)
#else
#define SUPERSEDES(a,b) ((a) != (b) && snap[a] == OK && sfr[a] == 0 && SGEQ(a,b) \
                         && (SGT(a,b) || (a) > (b)))
#endif
#define SUP_ANY(b) (SUPERSEDES(0,b) || SUPERSEDES(1,b) || SUPERSEDES(2,b)  \
                 || SUPERSEDES(4,b) || SUPERSEDES(5,b) || SUPERSEDES(6,b)     \
                 || SUPERSEDES(8,b) || SUPERSEDES(9,b) || SUPERSEDES(10,b))
#define SUP_ANY_OWN(r,b) (SUPERSEDES(B(r,0),b) || SUPERSEDES(B(r,1),b) || SUPERSEDES(B(r,2),b))
#define DROPPABLE(r,b) (snap[b] == OK && !(spn[r] != 0 && PSLOT(r) == (b)) && SUP_ANY(b))
#define CAN_DROP(r) (DROPPABLE(r,B(r,0)) || DROPPABLE(r,B(r,1)) || DROPPABLE(r,B(r,2)))

#ifdef ROLLBACK
/* some authentic snapshot holds o's writes 1..n */
#define SCOV(sl,o,n) (snap[sl] == OK && svv[SV(sl,o)] >= (n))
#define COVERED(o,n) (SCOV(0,o,n) || SCOV(1,o,n) || SCOV(2,o,n) || SCOV(4,o,n) \
                      || SCOV(5,o,n) || SCOV(6,o,n) || SCOV(8,o,n) || SCOV(9,o,n) \
                      || SCOV(10,o,n))
/* own pushed batch s is gone from the remote and no snapshot covers it */
#define LOST_OWN(r,s) ((s) <= pushed[r] && bat[B(r,s)] == ABS && !COVERED(r, hi[B(r,s)]))
#define SYNCING(r) (mode[r] == IDLE || mode[r] == PULL)
/* the remote lost the head of r's newest pushed batch */
#define HEAD_LOST(r) (pushed[r] > 0 && (hd[r] >> pushed[r]) == 0)
#define LOST_BLOB(r,s) ((s) <= pushed[r] && bat[B(r,s)] == OK && blob[BL(r, hi[B(r,s)])] == ABS)
inline REPUT_BLOB(r,s) { blob[BL(r, hi[B(r,s)])] = OK; bage[BL(r, hi[B(r,s)])] = 0; REACHED(21) }
inline REPUT(r,s) {
#ifdef RESTORE
  one_content(B(r,s), sgen[B(r,s)]);
#endif
  blob[BL(r, hi[B(r,s)])] = OK; bage[BL(r, hi[B(r,s)])] = 0;
  bat[B(r,s)] = OK; bfr[B(r,s)] = 1; anyfresh = 1;
  REACHED(19)                                 /* 19: a lost batch republished */
}
#endif

/* ====================================================================== */
/* RESTORED COPIES (-DRESTORE).  What a replica reads that shows its store */
/* is an older copy of itself, and what it does then.                     */
/* ====================================================================== */
#ifdef RESTORE
/* a head of r's id names a batch past what it sealed */
#define HEAD_PAST(r) ((hd[r] >> (lastSeq[r]+1)) != 0)
/* an authentic batch of r's id past what it sealed */
#define BAT_PAST(r) ((lastSeq[r] < 1 && bat[B(r,1)] == OK) || (lastSeq[r] < 2 && bat[B(r,2)] == OK))
/* the name of r's next batch already holds authentic bytes (this store
 * never sealed it, so they are other bytes) */
#define NEXT_TAKEN(r) (bat[B(r,lastSeq[r]+1)] == OK)
/* o's next batch depends on writes of r that r's store never made */
#define DEP_PAST(r,o) (PULLABLE_NODEP(r,o) && dep[DP(o,NXT(r,o),r)] > vv[V(r,r)])
#ifdef MUTANT_NO_RESTORE_CHECK
#define NAME_FREE(r) 1
#define MAY_SEAL_R(r) 1
#else
/* the batch being pushed may be put: its name holds no other authentic
 * bytes (the same bytes, a torn object or nothing: fine) */
#define NAME_FREE(r) (bat[CUR_BATCH(r)] != OK || bgen[CUR_BATCH(r)] == sgen[CUR_BATCH(r)])
/* the sync start and the push's own listing found no head past the seal,
 * and the next name is free */
#define MAY_SEAL_R(r) (!HEAD_PAST(r) && !NEXT_TAKEN(r))
#endif
#if defined(ROLLBACK)
/* a sync republishes a lost head before it pushes; a store that recorded
 * ownLoss seals nothing more under its id */
#ifdef MUTANT_NO_OWNLOSS
#define MAY_SEAL(r) (MAY_SEAL_R(r) && !HEAD_LOST(r))
#else
#define MAY_SEAL(r) (MAY_SEAL_R(r) && !HEAD_LOST(r) && !(r == 0 && ownLoss0))
#endif
#else
#define MAY_SEAL(r) MAY_SEAL_R(r)
#endif

/* Continue under a new id.  First the batches of the old id that no head
 * names (an unbroken run of authentic batches past its newest head) are
 * announced with a head of the old id; then the new id -- replica slot 2,
 * dormant until then -- starts from the copy's state: what it pushed of the
 * old id (a batch it sealed but did not push is abandoned: its writes are
 * made again under the new id) and what it applied of the others.  The old
 * id never acts again. */
inline recover(r) {
  ck = 0;
  for (ci : 1 .. NS-1) { if :: (hd[r] >> ci) & 1 -> ck = ci :: else -> skip fi };
#ifndef MUTANT_NO_ORPHANS
  do
  :: ck + 1 < NS && bat[B(r,ck+1)] == OK -> ck++; hd[r] = (1 << ck); landed[r] = ck; REACHED(23)
  :: else -> break
  od;
#endif
  for (ci : 0 .. NR-1) { vv[V(2,ci)] = vv[V(r,ci)] };
  vv[V(2,r)] = hi[B(r,pushed[r])];
  vv[V(2,2)] = 0; nw[2] = 0; mode[2] = IDLE;
  mode[r] = GONE; stage[r] = 0; late[r] = 0; hO[r] = 0; hS[r] = 0;
  ownLoss0 = 0; adopted = 1; ci = 0; ck = 0; REACHED(24)
}
#else
#define NAME_FREE(r) 1
#define MAY_SEAL(r) 1
#endif
#ifdef COPY_BEFORE_R0
#define BACKUP_OK(r) (pushed[r] > 0)
#else
#define BACKUP_OK(r) 1
#endif

/* state probes for the non-vacuity check (see REACHED) */
inline probes() {
  for (ci : 0 .. NR-1) {
    /* 9: a pull holds a batch back because its blob is torn */
    if :: mode[ci] == PULL && HELD_BLOB(ci) == TORN -> REACHED(9) :: else -> skip fi;
    /* 11: a batch is there but waits for the batches it depends on */
    for (cj : 0 .. NR-1) {
      if
      :: cj != ci && PULLABLE_NODEP(ci,cj) && !DEPOK(ci,cj,NXT(ci,cj)) -> REACHED(11)
      :: else -> skip
      fi
    }
  }
}

/* ====================================================================== */
/* The replica: one logical sync actor (docs/ARCHITECTURE.md 1, ConcordSync), plus   */
/* the app's local writes.                                                */
/* ====================================================================== */
proctype Replica(byte r)
{
end_idle:
  do
  :: atomic {
  /* Each option below is one step: a d_step whose first statement is its
   * guard (the step is enabled exactly when the guard holds).  After any
   * step, check() asserts the invariants, in the same atomic sequence (no
   * state in between is stored or interleaved), so every state is checked. */
  if
  /* ---- local writes (value + outbox in one SQLite transaction, DESIGN 3)
   *      + PUSH 0: seal the outbox into batch lastSeq+1 (stored locally)
   *      + PUSH 1: upload the blob the batch references.
   *      A write sitting in the outbox is seen by no other process, so the
   *      writes are made right before the seal that takes them: one write,
   *      or (if allowed) two writes coalesced into one batch. ---- */
  :: d_step { mode[r] == IDLE && pushed[r] == lastSeq[r] && nw[r] < WMAX(r) && MAY_SEAL(r) ->
       nw[r]++; vv[V(r,r)] = nw[r]; seal(r); first_upload(r); stage[r] = 1 }
  :: d_step { mode[r] == IDLE && pushed[r] == lastSeq[r] && nw[r] + 1 < WMAX(r) && MAY_SEAL(r) ->
       nw[r] = nw[r] + 2; vv[V(r,r)] = nw[r]; seal(r); first_upload(r); stage[r] = 1 }
  /*      after a restart: push the sealed batch again (identical bytes) */
  :: d_step { mode[r] == IDLE && pushed[r] < lastSeq[r] ->
#ifdef MUTANT_RESEAL
       /* MUTANT: the batch was not kept locally; the outbox, with any write
        * made since, is sealed again under the same seq */
       if
       :: nw[r] < WMAX(r) -> nw[r]++; vv[V(r,r)] = nw[r]; hi[B(r,lastSeq[r])] = nw[r]
       :: else -> skip
       fi;
#endif
       mode[r] = PUSH; first_upload(r); stage[r] = 1 }

#if defined(MUTANT_BATCH_BEFORE_BLOBS)
  /* MUTANT: the batch was uploaded first; now the blob, then the head */
  :: d_step { mode[r] == PUSH && stage[r] == 1 -> put_blob(r); stage[r] = 2 }
  :: d_step { mode[r] == PUSH && stage[r] == 2 -> put_head(r); push_done(r) }
#elif defined(MUTANT_HEAD_BEFORE_BATCH)
  /* MUTANT: the head is uploaded before the batch */
  :: d_step { mode[r] == PUSH && stage[r] == 1 -> put_head(r); stage[r] = 2 }
  :: d_step { mode[r] == PUSH && stage[r] == 2 -> put_batch(r); push_done(r) }
#else
  /* PUSH 2-4: within the attempt deadline, upload the batch, then the head
   *           heads/<r>-<seq> (its name tells pullers the latest seq), then
   *           delete the older heads and record the push as complete */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && IN_TIME(r) && NAME_FREE(r) ->
       put_batch(r); put_head(r); push_done(r) }
  /*         crash during the blob upload (torn blob) */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && faults > 0 ->
       put_blob_torn(r); crash(r); REACHED(15) }
  /*         crash during the batch upload (torn batch) */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && IN_TIME(r) && NAME_FREE(r) && faults > 0 ->
       put_batch_torn(r); crash(r); REACHED(6) }
  /*         crash between batch and head */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && IN_TIME(r) && NAME_FREE(r) && faults > 0 ->
       put_batch(r); crash(r) }
  /*         crash between the head and the deletion of the older heads */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && IN_TIME(r) && NAME_FREE(r) && faults > 0 ->
       put_batch(r); put_head(r); crash(r) }
  /*         deadline exceeded: restart the attempt, re-uploading the blob */
  :: d_step { mode[r] == PUSH && stage[r] == 1 && !IN_TIME(r) -> put_blob(r); REACHED(8) }
#endif
  /*      crash between the blob upload and the batch upload */
  :: d_step { mode[r] == PUSH && faults > 0 -> crash(r) }

  /* ---- PULL 1: list heads/, fetch the next batch of an origin ---- */
  :: d_step { mode[r] == IDLE && PULLABLE(r, O1(r)) ->
       hO[r] = O1(r); hS[r] = NXT(r, O1(r)); mode[r] = PULL }
  :: d_step { mode[r] == IDLE && PULLABLE(r, O2(r)) ->
       hO[r] = O2(r); hS[r] = NXT(r, O2(r)); mode[r] = PULL }
  /* PULL 2: fetch the blob it references, then apply it in one transaction.
   *         A torn blob is "not there yet": the batch is held back. */
  :: d_step { mode[r] == PULL && HELD_BLOB(r) == OK ->
       assert(vv[V(r,hO[r])] == hi[B(hO[r], hS[r]-1)]);    /* p0_seq_order */
       vv[V(r,hO[r])] = hi[B(hO[r],hS[r])];
       mode[r] = IDLE; hO[r] = 0; hS[r] = 0 }
  /*         the blob is gone (superseded, its batch compacted since the
   *         fetch): drop the batch; a snapshot must hold these writes */
  :: d_step { mode[r] == PULL && HELD_BLOB(r) == ABS && GONE_FOR_GOOD(r) ->
#ifndef ROLLBACK
       snap_covers(hO[r], hi[B(hO[r],hS[r])], p2_fallback);
       assert(p2_fallback);
#endif
       REACHED(3);                             /* 3: fetched batch's blob gone */
       mode[r] = IDLE; hO[r] = 0; hS[r] = 0 }

#ifdef JOIN_TWO_STEP
  /* ---- JOIN 1: read a snapshot that has something new ---- */
  :: d_step { mode[r] == IDLE && JOINABLE(r,0)  -> read_snap(r,0);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,1)  -> read_snap(r,1);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,2)  -> read_snap(r,2);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,4)  -> read_snap(r,4);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,5)  -> read_snap(r,5);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,6)  -> read_snap(r,6);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,8)  -> read_snap(r,8);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,9)  -> read_snap(r,9);  }
  :: d_step { mode[r] == IDLE && JOINABLE(r,10) -> read_snap(r,10) }
  /* JOIN 2: fetch the new blobs, then join (max), keeping own unpushed writes */
  :: d_step { mode[r] == JOIN && JOIN_READY(r) -> do_join(r) }
  /*         a blob is gone (the snapshot was replaced since the read): drop */
  :: d_step { mode[r] == JOIN && JOIN_FAIL(r) ->
       hv[V(r,0)] = 0; hv[V(r,1)] = 0; hv[V(r,2)] = 0; mode[r] = IDLE }
#else
  /* ---- JOIN: read a snapshot that has something new, fetch the blobs it
   *      references that are new here, join it.  One step by default: with
   *      the default SNAPPERS no snapshot is ever deleted, so nothing can
   *      change between the read and the fetch (-DJOIN_TWO_STEP splits it) */
  :: d_step { mode[r] == IDLE && JOIN1(r,0)  -> read_snap(r,0);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,1)  -> read_snap(r,1);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,2)  -> read_snap(r,2);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,4)  -> read_snap(r,4);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,5)  -> read_snap(r,5);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,6)  -> read_snap(r,6);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,8)  -> read_snap(r,8);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,9)  -> read_snap(r,9);  do_join(r) }
  :: d_step { mode[r] == IDLE && JOIN1(r,10) -> read_snap(r,10); do_join(r) }
#endif

  /* ---- SNAPSHOT 0: seal snapshots/<r>-<lastSeq> (state + vv) locally,
   *      SNAPSHOT 1: (re-)upload the blobs it references ---- */
  :: d_step { mode[r] == IDLE && CAN_SNAP(r) ->
       seal_snap(r); put_snap_blobs(r); mode[r] = SNAP }
  /*      after a restart: upload the sealed snapshot again */
  :: d_step { mode[r] == IDLE && spn[r] != 0 ->
       put_snap_blobs(r); mode[r] = SNAP }
  /* SNAPSHOT 2-3: within the deadline, upload the snapshot, record it as
   *               complete, keep the newest two completed snapshots */
  :: d_step { mode[r] == SNAP && IN_TIME(r) ->
       put_snap(r); snap_done(r) }
  /*         crash during the snapshot upload (torn snapshot) */
  :: d_step { mode[r] == SNAP && IN_TIME(r) && faults > 0 ->
       snap[PSLOT(r)] = TORN; sfr[PSLOT(r)] = 1; anyfresh = 1; crash(r); REACHED(7) }
  /*         crash after the upload, before recording it (will re-put) */
  :: d_step { mode[r] == SNAP && IN_TIME(r) && faults > 0 ->
       put_snap(r); crash(r) }
  /*         crash between the blob uploads and the snapshot upload */
  :: d_step { mode[r] == SNAP && faults > 0 -> crash(r) }
  /*         deadline exceeded: restart, re-uploading the blobs */
  :: d_step { mode[r] == SNAP && !IN_TIME(r) -> put_snap_blobs(r) }

  /* ---- DROP: delete one own snapshot another supersedes ---- */
  :: d_step { mode[r] == IDLE && CAN_DROP(r) ->
       ck = 0;
       for (ci : 0 .. 2) {
         if
         :: ck == 0 && DROPPABLE(r, B(r,ci)) ->
            /* 18: dropped for another replica's snapshot */
            if :: !SUP_ANY_OWN(r, B(r,ci)) -> REACHED(18) :: else -> skip fi;
            snap[B(r,ci)] = ABS; sfr[B(r,ci)] = 0; ck = 1
         :: else -> skip
         fi
       };
       ck = 0 }

#ifdef RESTORE
  /* ---- BACKUP of replica 0's store, right after a sync (everything
   *      pushed, no snapshot upload pending): local, so not a state of its
   *      own but fused with the sync's last step's outcome ---- */
  :: d_step { r == 0 && !bsaved && !restored && mode[r] == IDLE && pushed[r] == lastSeq[r] && spn[r] == 0 && BACKUP_OK(r) ->
       bk_nw = nw[r]; bk_last = lastSeq[r]; bk_sused = sused[r]; bk_ownLoss = ownLoss0;
       for (ci : 0 .. NR-1) { bk_vv[ci] = vv[V(r,ci)] };
       bsaved = 1; ci = 0 }
  /* ---- RESTORE: the device goes back to that backup, at any moment (a
   *      push or pull in flight is lost with the rest of the state).  The
   *      copy knows nothing of this: it finds out, or not, by the steps
   *      below, from what it reads on the remote. ---- */
  :: d_step { r == 0 && bsaved && !restored && mode[r] != GONE ->
       nw[r] = bk_nw; lastSeq[r] = bk_last; pushed[r] = bk_last; sused[r] = bk_sused; spn[r] = 0;
       for (ci : 0 .. NR-1) { vv[V(r,ci)] = bk_vv[ci]; hv[V(r,ci)] = 0 };
       mode[r] = IDLE; stage[r] = 0; late[r] = 0; hO[r] = 0; hS[r] = 0;
       ownLoss0 = bk_ownLoss;
       gen0 = 1; restored = 1; bsaved = 0;
       bk_nw = 0; bk_last = 0; bk_sused = 0; bk_vv[0] = 0; bk_vv[1] = 0; bk_vv[2] = 0; bk_ownLoss = 0;
       ci = 0; REACHED(22)
#ifdef FILE_IDENTITY
       /* restored as a new file: its next sync finds the store's file is not the one
        * it recorded and continues under a new id before it reads or seals anything
        * (what it writes before that sync is re-stamped under the new id, so the
        * detection is taken at the restore itself) */
       ; recover(r)
#endif
       }
#ifndef MUTANT_NO_RESTORE_CHECK
  /* ---- RESTORED-COPY DETECTION: what a sync of replica 0 reads that shows
   *      its store is an older copy of itself.  Each step continues under a
   *      new id (recover).  (Replica 0 is the only one whose device is
   *      restored, so only it can meet these; the rules are every replica's.)
   *  (a) sync start: a head of its id names a batch past what it sealed */
  :: d_step { r == 0 && mode[r] == IDLE && HEAD_PAST(r) -> recover(r) }
  /*  (a') the periodic listing of batches: an authentic batch of its id past
   *      what it sealed (its lost store was gone before that batch's head) */
  :: d_step { r == 0 && mode[r] == IDLE && BAT_PAST(r) -> recover(r) }
  /*  (b) push: the name of its next batch holds other authentic bytes.
   *      Checked right before the batch's put; at the seal (the copy makes
   *      the write, seals it, uploads its blob, finds the name taken: the
   *      batch is abandoned and its write made again under the new id) ... */
  :: d_step { r == 0 && mode[r] == IDLE && pushed[r] == lastSeq[r] && nw[r] < WMAX(r) && !HEAD_PAST(r) && NEXT_TAKEN(r) -> recover(r) }
  /*      ... or in a push under way (the remote went back to a copy holding
   *      that name since the seal) */
  :: d_step { r == 0 && mode[r] == PUSH && stage[r] == 1 && !NAME_FREE(r) -> recover(r) }
  /*  (c) pull: another replica's next batch depends on writes of its id
   *      this store never made */
  :: d_step { r == 0 && mode[r] == IDLE && (DEP_PAST(r, O1(r)) || DEP_PAST(r, O2(r))) -> recover(r) }
#endif
#if defined(ROLLBACK) && !defined(MUTANT_NO_OWNLOSS)
  /*  (d) the remote lost the head of its newest batch, and it had sealed
   *      nothing past it (ownLoss, recorded when it republished the head):
   *      at its next sync with a write to push, before sealing, it continues
   *      under a new id -- no remote object can tell it whether its next
   *      name was already used by a store it is an older copy of. */
  :: d_step { r == 0 && mode[r] == IDLE && ownLoss0 && pushed[r] == lastSeq[r] && nw[r] < WMAX(r) && !HEAD_LOST(r) -> REACHED(25); recover(r) }
#endif
#endif

#if defined(ROLLBACK) && !defined(MUTANT_NO_REPUBLISH)
  /* ---- REPUBLISH (rollbacks): an own pushed batch the remote lost and no
   *      authentic snapshot covers goes up again, its blob first, with the
   *      bytes sealed; an own head the remote lost is written again.  Each
   *      sync checks first, so a replica whose pull holds a batch back
   *      (waiting for a lost blob) checks too ---- */
  :: d_step { SYNCING(r) && LOST_OWN(r,1) -> REPUT(r,1) }
  :: d_step { SYNCING(r) && LOST_OWN(r,2) -> REPUT(r,2) }
  :: d_step { SYNCING(r) && HEAD_LOST(r) ->
#if defined(RESTORE) && !defined(MUTANT_NO_OWNLOSS)
       /* it sealed nothing past the lost head: recorded (ownLoss) */
       if :: r == 0 && lastSeq[r] == pushed[r] -> ownLoss0 = 1 :: else -> skip fi;
#endif
#ifdef RESTORE
       /* with the head, its own lost batches (republishOwn) */
       if :: LOST_OWN(r,1) -> REPUT(r,1) :: else -> skip fi;
       if :: LOST_OWN(r,2) -> REPUT(r,2) :: else -> skip fi;
#endif
       hd[r] = (1 << pushed[r]) }
  /*      the blob of an own batch still on the remote was lost (a rollback
   *      that fell between the blob and the batch upload): upload it again */
  :: d_step { SYNCING(r) && LOST_BLOB(r,1) -> REPUT_BLOB(r,1) }
  :: d_step { SYNCING(r) && LOST_BLOB(r,2) -> REPUT_BLOB(r,2) }
#endif

  /* ---- COMPACT: read the snapshots and delete one own pushed batch that
   *      an authentic snapshot covers.  Read and delete are one step: a writer deletes
   *      its older snapshots only after a newer one, covering at least as
   *      much, has landed, so a later delete sees the same coverage. ---- */
  :: d_step { mode[r] == IDLE && CAN_COMPACT(r) ->
#if defined(MUTANT_COMPACT_UNSAFE)
       hcov = WMAX(r);              /* MUTANT: no snapshot coverage required */
#elif defined(MUTANT_COMPACT_ALL_APPLIED)
       hcov = APPLIED_BY_ALL(r);    /* MUTANT: all applied, no snapshot      */
#else
       hcov = 0;
       for (ci : 0 .. NR*NS-1) {
         if
         :: AUTHENTIC(ci) && svv[SV(ci,r)] > hcov -> hcov = svv[SV(ci,r)]
         :: else -> skip
         fi
       }
#endif
       if
       :: 1 <= pushed[r] && bat[B(r,1)] != ABS && hi[B(r,1)] <= hcov -> ck = 1
       :: else ->
            assert(2 <= pushed[r] && bat[B(r,2)] != ABS && hi[B(r,2)] <= hcov);
            ck = 2
       fi;
       bat[B(r,ck)] = ABS; bfr[B(r,ck)] = 0;
       /* 13: deleted although some replica has not applied it yet */
       if :: UNAPPLIED(r,ck) -> REACHED(13) :: else -> skip fi;
       ck = 0;
       REACHED(2);                                  /* 2: a batch compacted */
       hcov = 0 }
  fi;
  d_step { check() }
  }
  od
}

/* ====================================================================== */
/* BLOB COLLECTION (docs/ARCHITECTURE.md 4): delete a blob no snapshot or batch      */
/* references once the blob object is at least GRACE ticks old.  The      */
/* listing of deltas/ and snapshots/ misses every fresh object (worst     */
/* case); a torn object counts as referencing (it cannot be read, so the  */
/* collector does not collect).  The age check and the delete are one     */
/* step: an ASSUMPTION -- with -DCOLLECT_TWO_STEP the collector acts on a */
/* stale decision and a re-uploaded blob is lost (README).  Retained      */
/* versions (history) are local and not modelled.  Any replica may        */
/* collect; one process stands for all.                                   */
/* ====================================================================== */
#define BREF(o,t,k)   (bat[B(o,t)] != ABS && !bfr[B(o,t)] && hi[B(o,t)] == (k))
#define SREF(sl,o,k)  (snap[sl] != ABS && !sfr[sl] && svv[SV(sl,o)] == (k))
#define REFD(o,k) (BREF(o,1,k) || BREF(o,2,k)                                   \
                   || SREF(0,o,k) || SREF(1,o,k) || SREF(2,o,k) || SREF(4,o,k)  \
                   || SREF(5,o,k) || SREF(6,o,k) || SREF(8,o,k) || SREF(9,o,k)  \
                   || SREF(10,o,k))
#ifdef MUTANT_NO_GRACE
#define OLD(o,k) 1
#else
#define OLD(o,k) (bage[BL(o,k)] >= GRACE)
#endif
#define COLLECTABLE(o,k) (blob[BL(o,k)] != ABS && OLD(o,k) && !REFD(o,k))

#ifndef COLLECT_TWO_STEP
proctype Collector()
{
end_gc:
  do
  :: atomic {
  if
  :: d_step { COLLECTABLE(0,1) -> blob[BL(0,1)] = ABS; bage[BL(0,1)] = 0; REACHED(1) }
  :: d_step { COLLECTABLE(0,2) -> blob[BL(0,2)] = ABS; bage[BL(0,2)] = 0; REACHED(1) }
  :: d_step { COLLECTABLE(1,1) -> blob[BL(1,1)] = ABS; bage[BL(1,1)] = 0; REACHED(1) }
  :: d_step { COLLECTABLE(1,2) -> blob[BL(1,2)] = ABS; bage[BL(1,2)] = 0; REACHED(1) }
  :: d_step { COLLECTABLE(2,1) -> blob[BL(2,1)] = ABS; bage[BL(2,1)] = 0; REACHED(1) }
  :: d_step { COLLECTABLE(2,2) -> blob[BL(2,2)] = ABS; bage[BL(2,2)] = 0; REACHED(1) }
  fi;
  d_step { check() }
  }
  od
}
#else
/* ASSUMPTION RELAXED: the collector decides (list, age check) in one step
 * and deletes in a later step, acting on its stale decision. */
byte gcand;           /* BL index + 1 of the blob the collector decided to delete */
proctype Collector()
{
end_gc:
  do
  :: atomic {
  if
  :: d_step { gcand == 0 && COLLECTABLE(0,1) -> gcand = BL(0,1) + 1 }
  :: d_step { gcand == 0 && COLLECTABLE(0,2) -> gcand = BL(0,2) + 1 }
  :: d_step { gcand == 0 && COLLECTABLE(1,1) -> gcand = BL(1,1) + 1 }
  :: d_step { gcand == 0 && COLLECTABLE(1,2) -> gcand = BL(1,2) + 1 }
  :: d_step { gcand == 0 && COLLECTABLE(2,1) -> gcand = BL(2,1) + 1 }
  :: d_step { gcand == 0 && COLLECTABLE(2,2) -> gcand = BL(2,2) + 1 }
  :: d_step { gcand != 0 -> blob[gcand-1] = ABS; bage[gcand-1] = 0; gcand = 0 }
  fi;
  d_step { check() }
  }
  od
}
#endif

#ifdef ROLLBACK
/* ====================================================================== */
/* STORAGE FAULTS (rollbacks).  Within the budget RFAULTS the remote loses */
/* a batch, every head of a replica, or a snapshot, or goes back to the    */
/* copy of itself (blobs included) taken by `backup` at an earlier moment. */
/* ====================================================================== */
#ifndef RFAULTS
#define RFAULTS 1
#endif
byte rfaults = RFAULTS;
bit  saved;
byte obat[NR*NS]; byte ohd[NR]; byte osnap[NR*NS]; byte osvv[NR*NS*NR];
byte oblob[NR*NB]; byte obage[NR*NB];
#define LOSE_BAT(i)  :: d_step { rfaults > 0 && bat[i] == OK -> bat[i] = ABS; bfr[i] = 0; rfaults-- }
#define LOSE_SNAP(i) :: d_step { rfaults > 0 && snap[i] == OK -> snap[i] = ABS; sfr[i] = 0; rfaults-- }
#define LOSE_HEAD(o) :: d_step { rfaults > 0 && hd[o] != 0 -> hd[o] = 0; rfaults-- }
proctype Storage()
{
end_storage:
  do
  :: atomic {
  if
  LOSE_BAT(1) LOSE_BAT(2) LOSE_BAT(5) LOSE_BAT(6)
  LOSE_SNAP(0) LOSE_SNAP(1) LOSE_SNAP(2) LOSE_SNAP(4) LOSE_SNAP(5) LOSE_SNAP(6)
  LOSE_HEAD(0) LOSE_HEAD(1) LOSE_HEAD(2)
  /* a copy of the remote is taken (not a fault; once) ... */
#ifdef COPY_BEFORE_R0
  /* (configuration G) the copy is taken before replica 0 seals its first
   * batch, and replica 0's backup after its first push: the remote goes back
   * further than the device */
  :: d_step { rfaults > 0 && !saved && lastSeq[0] == 0 ->
#else
  :: d_step { rfaults > 0 && !saved ->
#endif
       for (ci : 0 .. NR*NS-1) { obat[ci] = bat[ci]; osnap[ci] = snap[ci] }
       for (ci : 0 .. NR*NS*NR-1) { osvv[ci] = svv[ci] }
       for (ci : 0 .. NR-1) { ohd[ci] = hd[ci] }
       for (ci : 0 .. NR*NB-1) { oblob[ci] = blob[ci]; obage[ci] = bage[ci] }
       saved = 1; ci = 0 }
  /* ... and later put back in place of the remote */
  :: d_step { rfaults > 0 && saved ->
       for (ci : 0 .. NR*NS-1) { bat[ci] = obat[ci]; snap[ci] = osnap[ci]; bfr[ci] = 0; sfr[ci] = 0 }
       for (ci : 0 .. NR*NS*NR-1) { svv[ci] = osvv[ci] }
       for (ci : 0 .. NR-1) { hd[ci] = ohd[ci] }
       for (ci : 0 .. NR*NB-1) { blob[ci] = oblob[ci]; bage[ci] = obage[ci] }
       rfaults--; ci = 0; REACHED(20) }            /* 20: the remote went back */
  fi;
  d_step { check() }
  }
  od
}
#endif

/* ====================================================================== */
/* CLOCK.  A tick is enabled only when it changes something (a blob       */
/* younger than GRACE, or a fresh object).  A tick while an upload        */
/* attempt is between its blob upload and its batch/snapshot upload makes */
/* the attempt late: a "slow" fault, paid from the budget.                */
/* ====================================================================== */
#define YOUNG(i) (blob[i] != ABS && bage[i] < GRACE)
#define ANY_YOUNG (YOUNG(1) || YOUNG(2) || YOUNG(4) || YOUNG(5) || YOUNG(7) || YOUNG(8))
#define FLYING(r) ((mode[r] == PUSH && stage[r] == 1) || mode[r] == SNAP)
#define INFLIGHT  (FLYING(0) || FLYING(1) || FLYING(2))

proctype Clock()
{
end_clock:
  do
  :: atomic {
  if
  :: d_step { (ANY_YOUNG || anyfresh) && (!INFLIGHT || faults > 0) ->
       if :: INFLIGHT -> faults--; REACHED(16) :: else -> skip fi;
       for (ci : 0 .. NR-1) {
         if :: FLYING(ci) -> late[ci] = 1 :: else -> skip fi
       }
       for (ci : 0 .. NR*NB-1) {
         if :: blob[ci] != ABS && bage[ci] < GRACE -> bage[ci]++ :: else -> skip fi
       }
       for (ci : 0 .. NR*NS-1) { bfr[ci] = 0; sfr[ci] = 0 }
       anyfresh = 0 }
  fi;
  d_step { check() }
  }
  od
}

/* ====================================================================== */
/* p3 CONVERGENCE.  `timeout` holds exactly in a terminal state: no       */
/* process can move, so every write has been made and pushed, no fault    */
/* can happen any more (a fault is a move), and every pull, join,         */
/* compaction and collection that could happen has happened.             */
/* `check.sh --extended` also proves that the model has no infinite run   */
/* (no cycle at all), so every run ends in such a state.                  */
/* ====================================================================== */
proctype Finale()
{
  timeout -> assert(conv);
  if :: faults == 0 -> REACHED(17) :: else -> skip fi  /* 17: converged after all faults */
}

init {
  atomic {
#ifdef RESTORE
    mode[2] = GONE;
#endif
    run Replica(0); run Replica(1); run Replica(2);
    run Collector(); run Clock();
#ifdef ROLLBACK
    run Storage();
#endif
#ifndef NO_FINALE
    run Finale()
#endif
  }
}

#ifdef LTL
/* Checked with `pan -a` and no fairness assumption.  Spin extends a finite
 * run by repeating its terminal state, so <>[] p is judged there; any
 * infinite run (there is none: see the non-progress run) would have to
 * satisfy it too. */
ltl p1_delivered { <> [] delivered }
ltl p3_converged { <> [] conv }
#endif
