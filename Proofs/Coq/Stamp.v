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

(** [HLC.counterBits], [HLC.maxPhysical], [UInt64.max], [HLC.maxLead] (one day in
    milliseconds).  They are kept opaque so that no tactic ever unfolds the unary numbers. *)
Definition counterBits : nat := 16.
Definition maxPhysical : nat := Nat.pow 2 48 - 1.
Definition uint64Max : nat := Nat.pow 2 64 - 1.
Definition maxLead : nat := 24 * 60 * 60 * 1000.

(** [HLC.ceiling]: [maxPhysical << counterBits], the first value of the last millisecond. *)
Definition ceiling : nat := maxPhysical * Nat.pow 2 counterBits.

Lemma uint64Max_pos : 0 < uint64Max.
Proof.
  unfold uint64Max. pose proof (Nat.pow_le_mono_r 2 1 64 ltac:(lia) ltac:(lia)) as H.
  change (2 ^ 1) with 2 in H. lia.
Qed.

(** The whole range of stamps lies below [UInt64.max], with room for one more value:
    [ceiling + 1 = 2^64 - 2^16 + 1 < 2^64 - 1]. *)
Lemma ceiling_lt_uint64Max : S ceiling < uint64Max.
Proof.
  unfold ceiling, maxPhysical, uint64Max, counterBits.
  rewrite Nat.mul_sub_distr_r, Nat.mul_1_l, <- Nat.pow_add_r.
  change (48 + 16) with 64.
  pose proof (Nat.pow_le_mono_r 2 2 16 ltac:(lia) ltac:(lia)) as H1.
  pose proof (Nat.pow_le_mono_r 2 16 64 ltac:(lia) ltac:(lia)) as H2.
  change (2 ^ 2) with 4 in H1.
  generalize dependent (2 ^ 64). generalize dependent (2 ^ 16). intros. lia.
Qed.

Lemma ceiling_eq : ceiling = maxPhysical * Nat.pow 2 counterBits.
Proof. reflexivity. Qed.

#[global] Opaque maxPhysical uint64Max maxLead ceiling.

(** [HLC.value(physical:)] with counter 0: [min(millis, maxPhysical) << 16]. *)
Definition hlc_value (physicalMillis : nat) : nat :=
  Nat.min physicalMillis maxPhysical * Nat.pow 2 counterBits.

Lemma hlc_value_mono a b : a <= b -> hlc_value a <= hlc_value b.
Proof.
  intro H. unfold hlc_value. apply Nat.mul_le_mono_r. apply Nat.min_le_compat_r. exact H.
Qed.

Lemma hlc_value_le_ceiling a : hlc_value a <= ceiling.
Proof.
  unfold hlc_value. rewrite ceiling_eq.
  apply Nat.mul_le_mono_r, Nat.le_min_r.
Qed.

(** The [limit] of [tick]: [HLC.value(physical: overflow ? HLC.maxPhysical : now + maxLead)].
    Naturals do not overflow, and where [UInt64] does ([now + lead >= 2^64]) the sum is past
    [maxPhysical], where [HLC.value] clamps it to [maxPhysical] anyway: one formula. *)
Definition lead_limit (now lead : nat) : nat := hlc_value (now + lead).

Lemma hlc_value_le_lead_limit now lead : hlc_value now <= lead_limit now lead.
Proof. apply hlc_value_mono. lia. Qed.

Lemma lead_limit_lt_uint64Max now lead : S (lead_limit now lead) < uint64Max.
Proof.
  pose proof (hlc_value_le_ceiling (now + lead)). pose proof ceiling_lt_uint64Max.
  unfold lead_limit. lia.
Qed.

(** [struct HybridLogicalClock { latest: UInt64; observed: UInt64 }].  The second field is
    Swift's [observed]; it is named [clock_observed] here because [Delta.v] has a field
    [observed] of its own. *)
Record HybridLogicalClock := mkClock { latest : nat; clock_observed : nat }.

(** [init(latest:observed:)]: [observed = max(observed, latest)]. *)
Definition initClock (latest0 observed0 : nat) : HybridLogicalClock :=
  mkClock latest0 (Nat.max observed0 latest0).

(** The value [tick(physicalMillis:maxLead:)] issues once past its guard:
    [next = latest + 1], and, when [physicalMillis] is a time ([<= HLC.maxPhysical]),
    [max(next, HLC.value(physical: physicalMillis), min(observed, limit) + 1)]. *)
Definition tick_next (clock : HybridLogicalClock) (physicalMillis lead : nat) : nat :=
  if Nat.leb physicalMillis maxPhysical
  then Nat.max (Nat.max (S (latest clock)) (hlc_value physicalMillis))
               (S (Nat.min (clock_observed clock) (lead_limit physicalMillis lead)))
  else S (latest clock).

(** [mutating func tick(physicalMillis:maxLead:) throws -> UInt64]: [None] is the
    [clockExhausted] error ([guard latest < .max]; the clock is unchanged), [Some] the new
    clock ([latest = next], [observed = max(observed, next)]) and the value. *)
Definition tick (clock : HybridLogicalClock) (physicalMillis lead : nat)
  : option (HybridLogicalClock * nat) :=
  if Nat.ltb (latest clock) uint64Max then
    let next := tick_next clock physicalMillis lead in
    Some (mkClock next (Nat.max (clock_observed clock) next), next)
  else None.

(** [mutating func observe(_ remote: UInt64)]: [observed = max(observed, remote)]. *)
Definition observe (clock : HybridLogicalClock) (remote : nat) : HybridLogicalClock :=
  mkClock (latest clock) (Nat.max (clock_observed clock) remote).

(** [mutating func pass(_ own: UInt64)]: [latest = max(latest, own)],
    [observed = max(observed, own)]. *)
Definition pass (clock : HybridLogicalClock) (own : nat) : HybridLogicalClock :=
  mkClock (Nat.max (latest clock) own) (Nat.max (clock_observed clock) own).

(** *** Failure: exactly when the clock itself issued [UInt64.max] *)

(** [tick] fails iff [latest] is [UInt64.max] (for a 64-bit [latest], [uint64Max <= latest]
    is [latest = UInt64.max]); it succeeds, with the value [tick_next], otherwise. *)
Theorem tick_fails clock now lead : tick clock now lead = None <-> uint64Max <= latest clock.
Proof.
  unfold tick. destruct (Nat.ltb_spec (latest clock) uint64Max) as [L|L]; split; intro H;
    solve [discriminate | lia | reflexivity].
Qed.

Lemma tick_some clock now lead :
  latest clock < uint64Max ->
  tick clock now lead =
  Some (mkClock (tick_next clock now lead) (Nat.max (clock_observed clock) (tick_next clock now lead)),
        tick_next clock now lead).
Proof. intro H. unfold tick. destruct (Nat.ltb_spec (latest clock) uint64Max); [reflexivity | lia]. Qed.

Theorem tick_succeeds clock now lead :
  latest clock < uint64Max -> exists clock' v, tick clock now lead = Some (clock', v).
Proof. intro H. rewrite (tick_some clock now lead H). eauto. Qed.

Lemma tick_inv clock now lead clock' v :
  tick clock now lead = Some (clock', v) ->
  latest clock < uint64Max /\ v = tick_next clock now lead /\
  clock' = mkClock v (Nat.max (clock_observed clock) v).
Proof.
  unfold tick. destruct (Nat.ltb_spec (latest clock) uint64Max); [|discriminate].
  intro E. inversion E; subst. auto.
Qed.

Lemma tick_latest clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> latest clock' = v.
Proof. intro E. apply tick_inv in E as [_ [_ ->]]. reflexivity. Qed.

Lemma tick_observed clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> clock_observed clock' = Nat.max (clock_observed clock) v.
Proof. intro E. apply tick_inv in E as [_ [_ ->]]. reflexivity. Qed.

(** *** What [tick] issues *)

(** Own values strictly increase: no value is issued twice. *)
Theorem tick_gt_latest clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> latest clock < v.
Proof.
  intro E. apply tick_inv in E as [_ [-> _]]. unfold tick_next.
  destruct (Nat.leb_spec now maxPhysical); lia.
Qed.

(** [tick] is at least the physical time, when that is a time: stamps follow real time
    when clocks agree. *)
Theorem tick_ge_physical clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> now <= maxPhysical -> hlc_value now <= v.
Proof.
  intros E Hn. apply tick_inv in E as [_ [-> _]]. unfold tick_next.
  destruct (Nat.leb_spec now maxPhysical); lia.
Qed.

(** [tick] exceeds everything the clock observed, when that lies within [lead] of a
    physical time [now]. *)
Theorem tick_gt_observed clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> now <= maxPhysical ->
  clock_observed clock <= lead_limit now lead -> clock_observed clock < v.
Proof.
  intros E Hn Ho. apply tick_inv in E as [_ [-> _]]. unfold tick_next.
  destruct (Nat.leb_spec now maxPhysical); lia.
Qed.

(** A tick at [now] follows everything the clock observed: it had issued past it already,
    or [now] is a time and what it observed lies within [lead] of it. *)
Definition follows (clock : HybridLogicalClock) (now lead : nat) : Prop :=
  clock_observed clock <= latest clock \/
  (now <= maxPhysical /\ clock_observed clock <= lead_limit now lead).

Lemma tick_gt_followed clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> follows clock now lead -> clock_observed clock < v.
Proof.
  intros E [H|[Hn Ho]].
  - pose proof (tick_gt_latest _ _ _ _ _ E). lia.
  - apply (tick_gt_observed _ _ _ _ _ E Hn Ho).
Qed.

(** The bounded lead: whatever the clock observed, [tick] issues at most one more than
    the greater of what it issued itself and the limit [lead] ahead of [now]. *)
Theorem tick_le_lead clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> v <= Nat.max (S (latest clock)) (S (lead_limit now lead)).
Proof.
  intro E. apply tick_inv in E as [_ [-> _]]. unfold tick_next.
  pose proof (hlc_value_le_lead_limit now lead).
  destruct (Nat.leb_spec now maxPhysical); lia.
Qed.

(** ... and it stays within [UInt64]: the model's naturals never leave the Swift range. *)
Theorem tick_le_uint64Max clock now lead clock' v :
  tick clock now lead = Some (clock', v) -> v <= uint64Max.
Proof.
  intro E. pose proof (tick_le_lead _ _ _ _ _ E). apply tick_inv in E as [Hl _].
  pose proof (lead_limit_lt_uint64Max now lead). lia.
Qed.

(** *** [observe] and [pass] *)

Lemma observe_latest clock remote : latest (observe clock remote) = latest clock.
Proof. reflexivity. Qed.

Lemma observe_ge_remote clock remote : remote <= clock_observed (observe clock remote).
Proof. simpl. lia. Qed.

Lemma observe_ge_observed clock remote : clock_observed clock <= clock_observed (observe clock remote).
Proof. simpl. lia. Qed.

Lemma pass_ge_own clock own : own <= latest (pass clock own) /\ own <= clock_observed (pass clock own).
Proof. simpl. lia. Qed.

(** [pass] changes nothing on a clock that already passed [own]. *)
Lemma pass_id clock own :
  own <= latest clock -> own <= clock_observed clock -> pass clock own = clock.
Proof.
  intros H1 H2. destruct clock as [l o]. unfold pass; cbn [latest clock_observed] in *.
  rewrite (Nat.max_l l own H1), (Nat.max_l o own H2). reflexivity.
Qed.

(** *** No received stamp stops the clock *)

(** Observing a stamp, however large, never makes [tick] fail ... *)
Theorem observe_never_stops_tick clock remote now lead :
  tick (observe clock remote) now lead = None <-> tick clock now lead = None.
Proof. rewrite !tick_fails. reflexivity. Qed.

(** ... nor pushes what it issues past [max(latest + 1, limit + 1)] ... *)
Theorem tick_after_observe_le_lead clock remote now lead clock' v :
  tick (observe clock remote) now lead = Some (clock', v) ->
  v <= Nat.max (S (latest clock)) (S (lead_limit now lead)).
Proof. intro E. apply (tick_le_lead _ _ _ _ _ E). Qed.

(** ... so a clock whose own values are within the lead of [now] ticks after any remote
    stamp, and can tick again after that, at any time. *)
Theorem tick_again_within_lead clock remote now lead :
  latest clock <= lead_limit now lead ->
  exists clock' v, tick (observe clock remote) now lead = Some (clock', v) /\
    latest clock' < uint64Max /\
    forall now' lead', exists clock'' v', tick clock' now' lead' = Some (clock'', v').
Proof.
  intro H. pose proof (lead_limit_lt_uint64Max now lead) as Hl.
  destruct (tick_succeeds (observe clock remote) now lead) as [c' [v E]]; [cbn; lia|].
  exists c', v. split; [exact E|].
  assert (Hc : latest c' < uint64Max).
  { rewrite (tick_latest _ _ _ _ _ E). pose proof (tick_after_observe_le_lead _ _ _ _ _ _ E). lia. }
  split; [exact Hc|]. intros now' lead'. apply tick_succeeds. exact Hc.
Qed.

(** Rule 2, clock half: after observing a stamp within the lead of a physical time [now]
    (and nothing observed before beyond it), the next local value exceeds it, however far
    behind [now] the local clock is. *)
Theorem rule2_tick_after_observe clock remote now lead clock' v :
  tick (observe clock remote) now lead = Some (clock', v) ->
  now <= maxPhysical ->
  clock_observed clock <= lead_limit now lead -> remote <= lead_limit now lead ->
  remote < v.
Proof.
  intros E Hn Ho Hr. pose proof (tick_gt_observed _ _ _ _ _ E Hn) as H.
  cbn [clock_observed observe] in H. lia.
Qed.

(** ... and so the new stamp is greater, in stamp order, than every stamp observed,
    whichever replica issued it. *)
Theorem rule2_stamp_after_observe clock remote now lead clock' v (me : ReplicaID) (seen : Stamp) :
  tick (observe clock remote) now lead = Some (clock', v) ->
  now <= maxPhysical ->
  clock_observed clock <= lead_limit now lead -> remote <= lead_limit now lead ->
  hlc seen <= remote ->
  stamp_lt seen (mkStamp v me).
Proof.
  intros E Hn Ho Hr Hs. apply stamp_lt_of_hlc; cbn [hlc].
  pose proof (rule2_tick_after_observe clock remote now lead clock' v E Hn Ho Hr). lia.
Qed.
