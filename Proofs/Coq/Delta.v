(** * Delta.v — deltas, the state of a delta, and delta application.

    Mirrors [Sources/ConcordCore/Delta/Delta.swift] ([Delta], [observed], [ownRange],
    [state]) and [Sources/ConcordCore/Delta/StoreState+Apply.swift] ([apply],
    [missingDependencies], [hasApplied], [covers]).

    Modelling choice.  Swift's [apply] decides with [context.versionVector],
    [context.maxHLC(for:)] and [hasScopes], which read the normalised range
    representation.  Over contexts-as-sets these guards are propositions, so [apply] is
    modelled as a relation [apply_step] with one constructor per branch of the Swift
    function ([alreadyApplied], the fast path, the general join; a delta that is not
    ready throws and has no step).  The fast path itself, [apply_fast], is a function
    written line for line after the Swift loop. *)

From Coq Require Import Arith Lia Bool List String.
From Concord Require Import Stamp Context DotStore Values StoreState.
Import ListNotations.

(** [struct Delta { origin; seq; dependencies: VersionVector; upTo; records }];
    [records] gives, per touched slot, the entries it carries ([None]: not touched), and
    [whole] the records shipped whole ([RecordChange.whole]: a purge, or a record a purge
    touched before the seal). *)
Record Delta := mkDelta {
  origin : ReplicaID;
  seq : nat;
  dependencies : VersionVector;
  upTo : nat;
  records : string -> string -> SlotKey -> option (list Entry);
  whole : string -> string -> bool
}.

(** What the delta says of each slot: its carried entries; in a record shipped whole,
    every slot it does not carry is carried empty.  Swift's [Delta.state] writes those
    empty slots as one record-wide scope ([Record.scope]), which the join spreads over
    every slot of the record ([StoreState.joinRecords]); here the state is a total map of
    slots, so they are simply empty slots under the delta's scope. *)
Definition carried (d : Delta) (c i : string) (k : SlotKey) : option (list Entry) :=
  match records d c i k with
  | Some es => Some es
  | None => if whole d c i then Some [] else None
  end.

(** A delta with no record shipped whole carries exactly its [records]. *)
Lemma carried_not_whole d c i k : whole d c i = false -> carried d c i k = records d c i k.
Proof. intro H. unfold carried. destruct (records d c i k); [reflexivity|]. rewrite H. reflexivity. Qed.

(** [var observed: VersionVector] — dependencies with the origin raised to [upTo]. *)
Definition observed (d : Delta) : VersionVector := vv_set (dependencies d) (origin d) (upTo d).

(** [var ownRange: ClosedRange<UInt64>] — [(previous == 0 ? 0 : previous + 1)...upTo]. *)
Definition ownRange_lo (d : Delta) : nat :=
  let previous := dependencies d (origin d) in
  if Nat.eqb previous 0 then 0 else S previous.

(** [context.insert(ownRange, for: origin)] on an empty context. *)
Definition ownContext (d : Delta) : CausalContext :=
  ctx_insert_range ctx_empty (ownRange_lo d) (upTo d) (origin d).

(** [var state: StoreState]: context = the own range; each carried slot scoped by
    [CausalContext(observed).subtracting(context)]. *)
Definition delta_state (d : Delta) : StoreState :=
  let context := ownContext d in
  let scope := ctx_subtracting (ctx_of_vv (observed d)) context in
  mkState context (fun c i => mkRecord (fun k =>
    match carried d c i k with
    | Some es => mkSlot es scope
    | None => emptySlot
    end)).

(** What [Delta.init] validates and a replica guarantees when it seals
    ([Delta.validate()], [Replica.makeDelta]): a non-empty own range, entries sorted by
    dot and within the dependencies, and positive clock values (every [tick] is at
    least one, see [Stamp.tick_gt_latest]). *)
Record delta_valid (d : Delta) : Prop := {
  dv_upTo : dependencies d (origin d) < upTo d;
  dv_ordered : forall c i k es, carried d c i k = Some es -> ordered dot es;
  dv_observed : forall c i k es e, carried d c i k = Some es -> In e es ->
                hlc (dot e) <= observed d (replica (dot e));
  dv_positive : forall c i k es e, carried d c i k = Some es -> In e es -> 0 < hlc (dot e)
}.

(** Every entry of a state has a positive clock value. *)
Definition positive (s : StoreState) : Prop :=
  forall c i k e, In e (entries (slot_at s c i k)) -> 0 < hlc (dot e).

(** [func hasApplied(_ delta:) -> Bool] *)
Definition hasApplied (s : StoreState) (d : Delta) : Prop :=
  covers (context s) (origin d) (upTo d).

(** [missingDependencies(of:) == nil] *)
Definition ready (s : StoreState) (d : Delta) : Prop :=
  forall r, covers (context s) r (dependencies d r).

(** [!hasScopes] *)
Definition noScopes (s : StoreState) : Prop :=
  forall c i k, ctx_eq (scope (slot_at s c i k)) ctx_empty.

(** The fast-path guard: [context.maxHLC(for: origin) == dependencies[origin]],
    [context.versionVector != nil] and [!hasScopes]. *)
Definition fast_guard (s : StoreState) (d : Delta) : Prop :=
  exists V, ctx_eq (context s) (ctx_of_vv V) /\ V (origin d) = dependencies d (origin d) /\
            noScopes s.

(** The fast path of [apply]: per carried slot,
    [DotStore.join(slots[key]?.entries ?? [], seenBy: { context.contains($0) },
                   slot.entries, seenBy: { $0.hlc <= observed[$0.replica] })],
    stored without scope; then [context.insert(ownRange, for: origin)]. *)
Definition apply_fast (s : StoreState) (d : Delta) : StoreState :=
  let obs := observed d in
  let ctx := context s in
  mkState (ctx_insert_range ctx (ownRange_lo d) (upTo d) (origin d))
    (fun c i => mkRecord (fun k =>
       match carried d c i k with
       | Some es => mkSlot (dotstore_join dot (entries (slot_at s c i k)) ctx es
                                          (fun x => Nat.leb (hlc x) (obs (replica x))))
                           ctx_empty
       | None => slot_at s c i k
       end)).

(** [mutating func apply(_ delta: Delta) throws -> ApplyOutcome], one constructor per
    outcome. *)
Inductive apply_step (s : StoreState) (d : Delta) : StoreState -> Prop :=
| ApplyAlreadyApplied :
    hasApplied s d -> apply_step s d s
| ApplyFastPath :
    ~ hasApplied s d -> ready s d -> fast_guard s d -> apply_step s d (apply_fast s d)
| ApplyJoin :
    ~ hasApplied s d -> ready s d -> ~ fast_guard s d -> apply_step s d (joined s (delta_state d)).

(** ** Facts about the delta's contexts *)

Lemma ownContext_spec d x :
  ownContext d x = true <-> replica x = origin d /\ ownRange_lo d <= hlc x /\ hlc x <= upTo d.
Proof. unfold ownContext, ctx_insert_range, ctx_union, ctx_empty. cbn. apply ctx_range_spec. Qed.

Lemma ownRange_lo_le d h : dependencies d (origin d) < h -> ownRange_lo d <= h.
Proof. unfold ownRange_lo. destruct (Nat.eqb_spec (dependencies d (origin d)) 0); lia. Qed.

(** The own range and everything up to the dependencies make up what the origin
    observed. *)
Lemma observed_split d x :
  0 < hlc x -> hlc x <= observed d (replica x) ->
  ownContext d x = true \/ (replica x <> origin d \/ hlc x <= dependencies d (origin d)).
Proof.
  intros Hp Hx. unfold observed, vv_set in Hx.
  destruct (Nat.eqb_spec (replica x) (origin d)) as [E|E]; [|auto].
  destruct (le_lt_dec (hlc x) (dependencies d (origin d))); [auto|].
  left. apply ownContext_spec. split; [assumption|]. split; [apply ownRange_lo_le; assumption|lia].
Qed.

Lemma delta_state_context d : context (delta_state d) = ownContext d.
Proof. reflexivity. Qed.

Lemma delta_state_slot d c i k :
  slot_at (delta_state d) c i k =
  match carried d c i k with
  | Some es => mkSlot es (ctx_subtracting (ctx_of_vv (observed d)) (ownContext d))
  | None => emptySlot
  end.
Proof. reflexivity. Qed.

Lemma delta_state_wf d : delta_valid d -> state_wf (delta_state d).
Proof.
  intros Hv c i k. change (slot_wf (context (delta_state d)) (slot_at (delta_state d) c i k)).
  rewrite delta_state_context, delta_state_slot.
  destruct (carried d c i k) as [es|] eqn:E.
  - split; [|split]; cbn [entries scope].
    + eapply dv_ordered; eassumption.
    + intros e He. unfold seenBy, ctx_subtracting; cbn [scope].
      destruct (ownContext d (dot e)); [reflexivity|]. cbn [orb negb]. rewrite andb_true_r.
      apply ctx_of_vv_spec. split; [|eapply dv_observed; eassumption].
      pose proof (dv_positive d Hv c i k es e E He). pose proof (dv_observed d Hv c i k es e E He). lia.
    + intros x. unfold ctx_subtracting. destruct (ownContext d x); [|reflexivity].
      rewrite andb_false_r. discriminate.
  - split; [|split]; cbn.
    + constructor.
    + intros e [].
    + discriminate.
Qed.

(** ** Delta application equals joining the delta's state *)

Lemma filter_all {A} (f : A -> bool) l : (forall x, In x l -> f x = true) -> filter f l = l.
Proof.
  induction l as [|x l IH]; intro H; [reflexivity|]. cbn. rewrite H by (left; reflexivity).
  f_equal. apply IH. intros; apply H; right; assumption.
Qed.

Theorem apply_fast_eq_join s d :
  state_wf s -> positive s -> delta_valid d -> ready s d -> fast_guard s d ->
  state_eq (apply_fast s d) (joined s (delta_state d)).
Proof.
  intros Hwf Hpos Hv Hready [V [HV [HVo Hns]]].
  (* the own range is new to the state *)
  assert (Hown : forall x, ownContext d x = true -> context s x = false).
  { intros x Hx. apply ownContext_spec in Hx as [Hr [Hlo Hhi]]. rewrite HV.
    destruct (ctx_of_vv V x) eqn:E; [|reflexivity]. apply ctx_of_vv_spec in E as [E1 E2].
    rewrite Hr, HVo in *. unfold ownRange_lo in Hlo.
    destruct (Nat.eqb_spec (dependencies d (origin d)) 0); lia. }
  (* the readiness of the delta: its dependencies are within V *)
  assert (Hdeps : forall r, dependencies d r <= V r).
  { intro r. apply covers_vv_le. eapply covers_ext; [exact HV | apply Hready]. }
  (* every entry of the state is in its context, with a positive clock *)
  assert (Hent : forall c i k e, In e (entries (slot_at s c i k)) ->
                 context s (dot e) = true /\ 0 < hlc (dot e)).
  { intros c i k e He. destruct (Hwf c i k) as [_ [Hs _]]. specialize (Hs e He).
    change (slots (collections s c i) k) with (slot_at s c i k) in Hs.
    unfold seenBy in Hs. rewrite (Hns c i k (dot e)) in Hs. rewrite orb_false_r in Hs.
    split; [exact Hs | eapply Hpos; eassumption]. }
  (* what the origin observed is within the state's context and the own range *)
  assert (Hobs : forall x, ctx_of_vv (observed d) x = true ->
                 context s x = true \/ ownContext d x = true).
  { intros x Hx. apply ctx_of_vv_spec in Hx as [Hx1 Hx2]. rewrite HV.
    unfold observed, vv_set in Hx1, Hx2.
    destruct (Nat.eqb_spec (replica x) (origin d)) as [Er|Er].
    - destruct (le_lt_dec (hlc x) (dependencies d (origin d))) as [Hle|Hgt].
      + destruct (Nat.eqb_spec (dependencies d (origin d)) 0) as [Z|Z].
        * right. apply ownContext_spec. unfold ownRange_lo. rewrite Z. cbn. lia.
        * left. apply ctx_of_vv_spec. rewrite Er, HVo. lia.
      + right. apply ownContext_spec. split; [assumption|]. split; [|lia].
        apply ownRange_lo_le; assumption.
    - left. apply ctx_of_vv_spec. specialize (Hdeps (replica x)). lia. }
  split.
  - intro x. cbn [apply_fast joined context delta_state]. unfold ownContext, ctx_insert_range, ctx_union.
    cbn. reflexivity.
  - intros c i k.
    change (slot_eq (slot_at (apply_fast s d) c i k) (slot_at (joined s (delta_state d)) c i k)).
    rewrite slot_at_joined, delta_state_context, delta_state_slot.
    assert (Hfast : slot_at (apply_fast s d) c i k =
      match carried d c i k with
      | Some es => mkSlot (dotstore_join dot (entries (slot_at s c i k)) (context s) es
                                         (fun x => Nat.leb (hlc x) (observed d (replica x))))
                          ctx_empty
      | None => slot_at s c i k
      end) by reflexivity.
    rewrite Hfast.
    destruct (carried d c i k) as [es|] eqn:E.
    + split; cbn [entries scope joinSlots].
      * apply dotstore_join_ctx_local.
        -- intros y _. unfold seenBy. rewrite (Hns c i k (dot y)), orb_false_r. reflexivity.
        -- intros x Hx. destruct (Hent c i k x Hx) as [Hc Hp].
           unfold seenBy, ctx_subtracting; cbn [scope].
           assert (Eo : ownContext d (dot x) = false)
             by (destruct (ownContext d (dot x)) eqn:Eo;
                 [rewrite (Hown _ Eo) in Hc; discriminate | reflexivity]).
           rewrite Eo. cbn [orb negb]. rewrite andb_true_r. unfold ctx_of_vv.
           destruct (Nat.leb_spec (hlc (dot x)) (observed d (replica (dot x)))).
           ++ rewrite andb_true_r. symmetry. apply Nat.ltb_lt. lia.
           ++ rewrite andb_false_r. reflexivity.
      * intro x. unfold ctx_subtracting, ctx_union. rewrite (Hns c i k x). unfold ctx_empty.
        destruct (ctx_of_vv (observed d) x) eqn:Eo.
        -- destruct (Hobs x Eo) as [H|H]; rewrite H;
             destruct (ownContext d x), (context s x); reflexivity.
        -- destruct (ownContext d x), (context s x); reflexivity.
    + split; cbn [entries scope joinSlots emptySlot].
      * rewrite dotstore_join_merge, merge_nil_r. symmetry. apply filter_all.
        intros x Hx. destruct (Hent c i k x Hx) as [Hc _]. unfold seenBy; cbn [scope].
        destruct (ownContext d (dot x)) eqn:Eo; [rewrite (Hown _ Eo) in Hc; discriminate|].
        reflexivity.
      * intro x. unfold ctx_subtracting, ctx_union. rewrite (Hns c i k x). reflexivity.
Qed.

(** ** The metadata purge

    A purge ships a dead record whole and empty ([Replica.purge], [Store.purge]): in
    every slot of that record, applying it keeps exactly the entries its origin had not
    observed — and leaves every slot the delta does not carry as it was.  With
    [apply_eq_join] this is a join like any other delta, so replicas that purge and
    replicas that apply the purge converge. *)
Theorem purge_removes_exactly_observed s d c i k :
  whole d c i = true -> records d c i k = None ->
  entries (slot_at (apply_fast s d) c i k) =
    filter (fun x => negb (Nat.leb (hlc (dot x)) (observed d (replica (dot x)))))
           (entries (slot_at s c i k)).
Proof.
  intros Hw Hr. cbn [apply_fast slot_at collections slots]. unfold carried. rewrite Hr, Hw.
  cbn [entries]. rewrite dotstore_join_merge, merge_nil_r. reflexivity.
Qed.

Theorem apply_fast_untouched s d c i k :
  carried d c i k = None -> slot_at (apply_fast s d) c i k = slot_at s c i k.
Proof. intro H. cbn [apply_fast slot_at collections slots]. rewrite H. reflexivity. Qed.

(** Applying a delta that a state has not applied yet — by whichever branch — gives
    the join of the state with the delta's state (the theorem the Swift tests check). *)
Theorem apply_eq_join s d s' :
  state_wf s -> positive s -> delta_valid d -> ~ hasApplied s d ->
  apply_step s d s' -> state_eq s' (joined s (delta_state d)).
Proof.
  intros Hwf Hpos Hv Hna Hstep. destruct Hstep as [Ha|_ Hr Hg|_ _ _].
  - contradiction.
  - apply apply_fast_eq_join; assumption.
  - apply state_eq_refl.
Qed.

(** After applying a delta, a state has applied it. *)
Lemma hasApplied_after s d :
  delta_valid d -> ready s d ->
  hasApplied (mkState (ctx_union (context s) (ownContext d)) (collections s)) d.
Proof.
  intros Hv Hr. unfold hasApplied. right. intros h Hh. cbn [context]. unfold ctx_union.
  destruct (le_lt_dec h (dependencies d (origin d))) as [Hle|Hgt].
  - destruct (Hr (origin d)) as [Z|Hc].
    + rewrite orb_true_iff. right. apply ownContext_spec; cbn. unfold ownRange_lo. rewrite Z; cbn. lia.
    + rewrite Hc by assumption. reflexivity.
  - rewrite orb_true_iff. right. apply ownContext_spec; cbn. split; [reflexivity|].
    split; [apply ownRange_lo_le; assumption | lia].
Qed.

(** Rule 8: applying a delta twice changes nothing — the second application finds it
    applied and leaves the state as it is. *)
Theorem apply_twice s d s1 s2 :
  delta_valid d -> apply_step s d s1 -> apply_step s1 d s2 -> s2 = s1.
Proof.
  intros Hv H1 H2.
  assert (Happ : hasApplied s1 d).
  { destruct H1 as [Ha|_ Hr _|_ Hr _].
    - exact Ha.
    - pose proof (hasApplied_after s d Hv Hr) as H. unfold hasApplied in *.
      eapply covers_ext; [|exact H]. intro x. cbn [apply_fast context].
      unfold ctx_insert_range, ownContext, ctx_insert_range, ctx_union. reflexivity.
    - exact (hasApplied_after s d Hv Hr). }
  destruct H2 as [_|Hn _ _|Hn _ _]; [reflexivity | contradiction | contradiction].
Qed.
