/*
 * Key generations and rotation (docs/ARCHITECTURE.md §5, "Key generations").
 *
 * N replicas; replicas 0 and 1 are owners that may rotate the store key (only owners: a key
 * object anyone else writes is left aside by every replica, so it is not modelled — it is as
 * if never written; files are sealed like every other object). Generation 0 is the
 * key of concord.json, which every replica holds. A rotation by owner o:
 *   - reads (a possibly stale subset of) the key objects on the remote; its parents are the
 *     frontier of the generations it knows, whose keys it must hold all;
 *   - seals the new key to the members it sees (the recipients of its frontier) minus the
 *     one it removes (any replica but itself), itself always included;
 *   - PUTS the key object (one atomic object), and only then ADOPTS it (seals under it);
 *     it may crash in between (it never adopts; it may read the object back later like
 *     anyone else).
 * Every replica, at any time, reads any key object the remote holds (listings are stale:
 * any subset, any order) and seals an object under its current generation: the frontier
 * of the key graph it knows, whose key is derived from ALL frontier keys (a replica that
 * lacks one is removed and seals nothing). Key chaining: holding a generation's key gives
 * its parents' keys.
 *
 * Properties (asserted on every seal, and in the finale):
 *   p_removed     no replica seals under a key that a member it knows was removed can
 *                 derive — the removed member reading EVERY key object on the remote, with
 *                 every key it was ever sealed, chaining included;
 *   p_published   every generation an object is sealed under has its key object on the
 *                 remote (a crash never leaves objects no recipient can open);
 *   finale        once every replica has read every key object: the replicas that are not
 *                 removed agree on one frontier, and every replica removed in no rotation
 *                 still derives the current key.
 *
 * Non-vacuity (check-keyring.sh --vacuity: each probe must be reachable, i.e. fail):
 *   REACH=1   a seal under a generation merged from two concurrent rotations
 *   REACH=2   such a seal by a replica that knows of a removal
 *   REACH=3   ... where the removed member holds one of the merged generations' keys
 *
 * Mutants (check-keyring.sh: each must be caught):
 *   MUTANT_NEWEST_ONLY     the current key is the newest frontier generation's alone (no
 *                          derivation from all concurrent ones)
 *   MUTANT_ADOPT_FIRST     the rotating replica seals under the new key before putting it
 *   MUTANT_KEEP_REMOVED    the new key is also sealed to the member being removed
 *   MUTANT_FORGET_REMOVED  a rotation seals to every replica but the one it removes now,
 *                          forgetting those earlier rotations removed
 */

#ifndef N
#define N 4
#endif
#ifndef ROT
#define ROT 2            /* rotations in all (3: check-keyring.sh --extended) */
#endif
#define G (ROT + 1)      /* generations: 0 and one per rotation */

byte published;          /* bitmask of generations whose key object is on the remote */
byte parents[G];         /* per generation, its parents (bitmask) */
byte recip[G];           /* per generation, its recipients (bitmask of replicas) */
byte gone[G];            /* per generation, the member its rotation removes (bitmask) */
byte seen[N];            /* per replica, the key objects it read (bitmask), 0 included */
byte nextGen = 1;
byte done = 0;
/* scratch of the atomic steps: never read across steps, so kept out of the state vector */
hidden byte g, changed, kn, ks, fr, cur, m, adv, advKn, members, removed, probe;

/* known: the seen generations whose parents are all known (closure from generation 0) */
inline known(s, out) {
  out = 1;
  do
  :: atomic {
       g = 1; changed = 0;
       do
       :: g < G ->
          if
          :: (s & (1 << g)) && !(out & (1 << g)) && ((parents[g] & out) == parents[g]) ->
             out = out | (1 << g); changed = 1
          :: else
          fi;
          g++
       :: else -> break
       od
     };
     if :: changed == 0 -> break :: else fi
  od
}

/* the keys replica r holds among the generations `kn`: 0, those sealed to it, and chaining */
inline keysOf(r, kn, out) {
  out = 1;
  g = 1;
  do
  :: g < G -> if :: (kn & (1 << g)) && (recip[g] & (1 << r)) -> out = out | (1 << g) :: else fi; g++
  :: else -> break
  od;
  do
  :: atomic {
       g = 1; changed = 0;
       do
       :: g < G ->
          if
          :: (out & (1 << g)) && (kn & (1 << g)) && ((out & parents[g]) != parents[g]) ->
             out = out | parents[g]; changed = 1
          :: else
          fi;
          g++
       :: else -> break
       od
     };
     if :: changed == 0 -> break :: else fi
  od
}

/* the frontier of `kn`: known generations no known generation follows */
inline frontierOf(kn, out) {
  out = kn;
  g = 1;
  do
  :: g < G -> if :: kn & (1 << g) -> out = out & ~parents[g] :: else fi; g++
  :: else -> break
  od
}

/* the generations whose keys together make the current key */
inline currentOf(fr, out) {
#ifdef MUTANT_NEWEST_ONLY
  out = 0; g = 0;
  do :: g < G -> if :: fr & (1 << g) -> out = (1 << g) :: else fi; g++ :: else -> break od
#else
  out = fr
#endif
}

proctype Replica(byte r) {
  byte ng;
  do
  /* read a key object the remote holds (a listing shows any subset) */
  :: atomic { (published & ~seen[r] & 2) -> seen[r] = seen[r] | 2 }
#if ROT >= 2
  :: atomic { (published & ~seen[r] & 4) -> seen[r] = seen[r] | 4 }
#endif
#if ROT >= 3
  :: atomic { (published & ~seen[r] & 8) -> seen[r] = seen[r] | 8 }
#endif
  /* seal an object under the current generation */
  :: atomic {
       known(seen[r], kn); keysOf(r, kn, ks); frontierOf(kn, fr); currentOf(fr, cur);
       if
       :: (ks & cur) == cur ->
          /* p_published */
          assert((cur & ~published & ~1) == 0);
          /* p_removed: every member some known rotation left out derives nothing current */
          known(published, advKn);
          probe = 0;
          m = 0;
          do
          :: m < N ->
             g = 1; removed = 0;
             do :: g < G -> if :: (kn & (1 << g)) && (gone[g] & (1 << m)) -> removed = 1 :: else fi; g++ :: else -> break od;
             if
             :: removed -> keysOf(m, advKn, adv); assert((adv & cur) != cur); probe = 1
             :: else
             fi;
             m++
          :: else -> break
          od;
#if REACH == 1
          assert((cur & (cur - 1)) == 0)   /* reachable: a seal under two concurrent generations merged */
#elif REACH == 2
          assert(!(probe && (cur & (cur - 1)) != 0))   /* ...while a removal is known */
#elif REACH == 3
          assert(!probe || (adv & cur) == 0 || (cur & (cur - 1)) == 0)   /* ...and the removed member holds one of them */
#else
          skip
#endif
       :: else   /* removed: seals nothing */
       fi }
  /* rotate (owners only): put the key object, then adopt it — or crash in between */
  :: atomic { r < 2 && nextGen < G ->
       known(seen[r], kn); keysOf(r, kn, ks); frontierOf(kn, fr);
       ng = 0;
       if
       :: (ks & fr) == fr ->   /* a removed owner cannot rotate */
          ng = nextGen; nextGen++;
          parents[ng] = fr;
          /* the members it sees: the recipients of every frontier generation (all at first) */
          members = (1 << N) - 1;
#ifndef MUTANT_FORGET_REMOVED
          g = 1;
          do :: g < G -> if :: fr & (1 << g) -> members = members & recip[g] :: else fi; g++ :: else -> break od;
#endif
          /* remove one other member */
          if
          :: r != 0 && (members & 1) -> m = 0
          :: r != 1 && (members & 2) -> m = 1
          :: r != 2 && (members & 4) -> m = 2
#if N >= 4
          :: r != 3 && (members & 8) -> m = 3
#endif
          :: else -> m = N   /* no one left to remove */
          fi;
          gone[ng] = (m < N -> (1 << m) : 0);
#ifdef MUTANT_KEEP_REMOVED
          recip[ng] = members | (1 << r);
#else
          recip[ng] = (members & ~(1 << m)) | (1 << r);
#endif
#ifdef MUTANT_ADOPT_FIRST
          seen[r] = seen[r] | (1 << ng)
#else
          published = published | (1 << ng)
#endif
       :: else
       fi
     };
     if
     :: ng != 0 ->
#ifdef MUTANT_ADOPT_FIRST
        if
        :: published = published | (1 << ng)
        :: skip   /* crash: the put never happens; it sealed under the key meanwhile */
        fi
#else
        if
        :: seen[r] = seen[r] | (1 << ng)
        :: skip   /* crash before adopting: it reads the object back later, like anyone */
        fi
#endif
        ;
        ng = 0
     :: else
     fi
  :: break
  od;
  atomic { done++ }
}

init {
  byte i, fr0, outside;
  atomic {
    i = 0;
    do :: i < N -> seen[i] = 1; run Replica(i); i++ :: else -> break od
  }
  (done == N);
  /* finale: everyone has read every key object */
  atomic {
    fr0 = 255;
    outside = 0;
    g = 1;
    do :: g < G -> if :: published & (1 << g) -> outside = outside | gone[g] :: else fi; g++ :: else -> break od;
    i = 0;
    do
    :: i < N ->
       known(published, kn); keysOf(i, kn, ks); frontierOf(kn, fr); currentOf(fr, cur);
       if
       :: (ks & cur) == cur ->
          if :: fr0 == 255 -> fr0 = fr :: else -> assert(fr == fr0) fi
       :: else -> assert(outside & (1 << i))   /* only a removed replica lacks the key */
       fi;
       i++
    :: else -> break
    od
  }
}
