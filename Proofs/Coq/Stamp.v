(** * Stamp.v — stamps (dots), their order, and the hybrid logical clock.

    Mirrors [Sources/ConcordCore/Identity/ReplicaID.swift],
    [Sources/ConcordCore/Clock/Stamp.swift] and
    [Sources/ConcordCore/Clock/HybridLogicalClock.swift]. *)

From Coq Require Import Arith Lia Bool.

(** [ReplicaID] is 128 bits [(high, low)] compared lexicographically.  We encode it as
    the natural number [high * 2^64 + low]: the numeric order of the encoding is exactly
    the lexicographic order of the pair, and equality is equality. *)
Definition ReplicaID := nat.

(** [struct Stamp { hlc: UInt64; replica: ReplicaID }].  A stamp doubles as a dot. *)
Record Stamp := mkStamp { hlc : nat; replica : ReplicaID }.

(** [static func < (lhs: Stamp, rhs: Stamp)]:
    [lhs.hlc != rhs.hlc ? lhs.hlc < rhs.hlc : lhs.replica < rhs.replica]. *)
Definition stamp_ltb (lhs rhs : Stamp) : bool :=
  if negb (Nat.eqb (hlc lhs) (hlc rhs)) then Nat.ltb (hlc lhs) (hlc rhs)
  else Nat.ltb (replica lhs) (replica rhs).

Definition stamp_lt (a b : Stamp) : Prop := stamp_ltb a b = true.

(** Synthesised [Equatable] of [Stamp]. *)
Definition stamp_eqb (a b : Stamp) : bool :=
  Nat.eqb (hlc a) (hlc b) && Nat.eqb (replica a) (replica b).

Lemma stamp_eqb_spec (a b : Stamp) : reflect (a = b) (stamp_eqb a b).
Proof.
  destruct a as [h1 r1], b as [h2 r2]; unfold stamp_eqb; simpl.
  destruct (Nat.eqb_spec h1 h2), (Nat.eqb_spec r1 r2); simpl; constructor;
    try (subst; reflexivity); intro H; inversion H; contradiction.
Qed.

Lemma stamp_eqb_refl (a : Stamp) : stamp_eqb a a = true.
Proof. destruct (stamp_eqb_spec a a); [reflexivity | contradiction]. Qed.

Lemma stamp_eqb_sym (a b : Stamp) : stamp_eqb a b = stamp_eqb b a.
Proof.
  destruct (stamp_eqb_spec a b), (stamp_eqb_spec b a); subst; congruence.
Qed.

Lemma stamp_eqb_neq (a b : Stamp) : a <> b -> stamp_eqb a b = false.
Proof. intro H. destruct (stamp_eqb_spec a b); [contradiction | reflexivity]. Qed.

Definition stamp_eq_dec (a b : Stamp) : {a = b} + {a <> b}.
Proof. destruct (stamp_eqb_spec a b); [left | right]; assumption. Defined.

Lemma stamp_lt_iff (a b : Stamp) :
  stamp_lt a b <-> hlc a < hlc b \/ (hlc a = hlc b /\ replica a < replica b).
Proof.
  unfold stamp_lt, stamp_ltb.
  destruct (Nat.eqb_spec (hlc a) (hlc b)); simpl;
    [rewrite Nat.ltb_lt | rewrite Nat.ltb_lt]; lia.
Qed.

Lemma stamp_lt_irrefl (a : Stamp) : ~ stamp_lt a a.
Proof. rewrite stamp_lt_iff. lia. Qed.

Lemma stamp_lt_trans (a b c : Stamp) : stamp_lt a b -> stamp_lt b c -> stamp_lt a c.
Proof. rewrite !stamp_lt_iff. lia. Qed.

Lemma stamp_lt_asym (a b : Stamp) : stamp_lt a b -> ~ stamp_lt b a.
Proof. rewrite !stamp_lt_iff. lia. Qed.

Lemma stamp_lt_neq (a b : Stamp) : stamp_lt a b -> a <> b.
Proof. intros H E; subst; exact (stamp_lt_irrefl _ H). Qed.

(** The order is total: every two stamps are equal or ordered. *)
Lemma stamp_trichotomy (a b : Stamp) : stamp_lt a b \/ a = b \/ stamp_lt b a.
Proof.
  destruct a as [h1 r1], b as [h2 r2]. rewrite !stamp_lt_iff; simpl.
  destruct (Nat.lt_trichotomy h1 h2) as [|[|]]; [lia| |lia]. subst.
  destruct (Nat.lt_trichotomy r1 r2) as [|[|]]; [lia| |lia]. subst. auto.
Qed.

Lemma stamp_ltb_false_false (a b : Stamp) :
  stamp_ltb a b = false -> stamp_ltb b a = false -> a = b.
Proof.
  intros H1 H2. destruct (stamp_trichotomy a b) as [H|[H|H]];
    unfold stamp_lt in H; congruence.
Qed.

(** A greater clock value is a greater stamp, whichever replicas wrote them. *)
Lemma stamp_lt_of_hlc (a b : Stamp) : hlc a < hlc b -> stamp_lt a b.
Proof. rewrite stamp_lt_iff. lia. Qed.

(** ** The hybrid logical clock ([HybridLogicalClock.swift]) *)

(** [HLC.counterBits], [HLC.maxPhysical], [UInt64.max].  They are kept opaque so that
    no tactic ever unfolds the unary numbers. *)
Definition counterBits : nat := 16.
Definition maxPhysical : nat := Nat.pow 2 48 - 1.
Definition uint64Max : nat := Nat.pow 2 64 - 1.
Lemma uint64Max_pos : 0 < uint64Max.
Proof.
  unfold uint64Max. pose proof (Nat.pow_le_mono_r 2 1 64 ltac:(lia) ltac:(lia)) as H.
  change (2 ^ 1) with 2 in H. lia.
Qed.

#[global] Opaque maxPhysical uint64Max.

(** [HLC.value(physical:)] with counter 0: [min(millis, maxPhysical) << 16]. *)
Definition hlc_value (physicalMillis : nat) : nat :=
  Nat.min physicalMillis maxPhysical * Nat.pow 2 counterBits.

(** [struct HybridLogicalClock { latest: UInt64 }] *)
Record HybridLogicalClock := mkClock { latest : nat }.

(** [mutating func tick(physicalMillis:) -> UInt64]: returns the new clock and the value. *)
Definition tick (clock : HybridLogicalClock) (physicalMillis : nat) : HybridLogicalClock * nat :=
  let floor := hlc_value physicalMillis in
  let next := if Nat.eqb (latest clock) uint64Max then uint64Max
              else Nat.max floor (S (latest clock)) in
  (mkClock next, next).

(** [mutating func observe(_ remote: UInt64)] *)
Definition observe (clock : HybridLogicalClock) (remote : nat) : HybridLogicalClock :=
  mkClock (Nat.max (latest clock) remote).

Lemma tick_latest clock now : latest (fst (tick clock now)) = snd (tick clock now).
Proof. reflexivity. Qed.

(** [tick] exceeds everything the clock issued or observed (unless saturated at
    [UInt64.max], which takes 65,536 writes per millisecond for 8,900 years). *)
Lemma tick_gt_latest clock now :
  latest clock < uint64Max -> latest clock < snd (tick clock now).
Proof.
  intro H. unfold tick; cbn [fst snd].
  destruct (Nat.eqb_spec (latest clock) uint64Max); [lia|].
  pose proof (Nat.le_max_r (hlc_value now) (S (latest clock))). lia.
Qed.

(** [tick] is at least the physical time: stamps follow real time when clocks agree. *)
Lemma tick_ge_physical clock now :
  latest clock < uint64Max -> hlc_value now <= snd (tick clock now).
Proof.
  intro H. unfold tick; cbn [fst snd].
  destruct (Nat.eqb_spec (latest clock) uint64Max); [lia|].
  apply Nat.le_max_l.
Qed.

Lemma observe_ge_remote clock remote : remote <= latest (observe clock remote).
Proof. simpl. lia. Qed.

Lemma observe_ge_latest clock remote : latest clock <= latest (observe clock remote).
Proof. simpl. lia. Qed.

(** Rule 2, clock half: after observing a stamp, the next local value is at least one
    more than it, whatever the local physical time [now] says. *)
Theorem rule2_tick_after_observe clock remote now :
  latest (observe clock remote) < uint64Max ->
  remote < snd (tick (observe clock remote) now).
Proof.
  intro H. pose proof (tick_gt_latest (observe clock remote) now H).
  pose proof (observe_ge_remote clock remote). lia.
Qed.

(** ... and so the new stamp is greater, in stamp order, than every stamp observed,
    whichever replica issued it and whatever the clocks say. *)
Theorem rule2_stamp_after_observe clock remote now (me : ReplicaID) (seen : Stamp) :
  latest (observe clock remote) < uint64Max ->
  hlc seen <= remote ->
  stamp_lt seen (mkStamp (snd (tick (observe clock remote) now)) me).
Proof.
  intros H Hs. apply stamp_lt_of_hlc; cbn [hlc].
  pose proof (rule2_tick_after_observe clock remote now H). lia.
Qed.
