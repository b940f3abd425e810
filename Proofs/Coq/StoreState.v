(** * StoreState.v — slots, records and the store state, and their joins.

    Mirrors [Sources/ConcordCore/Record/SlotKey.swift] ([Slot], [Record]),
    [Sources/ConcordCore/State/StoreState.swift] and
    [Sources/ConcordCore/State/StoreState+Join.swift] ([joined], [joinRecords],
    [joinSlots]).

    Modelling choice.  Swift stores only non-empty slots, records and collections, and a
    slot's [scope] is [nil] when empty.  We model the maps as total functions whose
    default is the empty slot ([entries = []], empty scope); the dropped empties of
    Swift are exactly the defaults here.  Two states are equal ([state_eq]) when their
    contexts hold the same dots and every slot has the same entry list and the same
    scope — the same relation Swift's [==] decides on its normalised representation.
    The entry lists are compared with [=]: sorted lists are canonical (see DotStore). *)

From Coq Require Import Arith Lia Bool List String.
From Concord Require Import Stamp Context DotStore Values.
Import ListNotations.

(** [struct Slot { entries: [Entry]; scope: CausalContext? }] *)
Record Slot := mkSlot { entries : list Entry; scope : CausalContext }.

Definition emptySlot : Slot := mkSlot [] ctx_empty.

(** [struct Record { slots: [SlotKey: Slot] }] *)
Record StoreRecord := mkRecord { slots : SlotKey -> Slot }.

Definition emptyRecord : StoreRecord := mkRecord (fun _ => emptySlot).

(** [struct StoreState { context: CausalContext;
    collections: [String: [String: Record]] }] *)
Record StoreState := mkState {
  context : CausalContext;
  collections : string -> string -> StoreRecord
}.

(** [StoreState()] *)
Definition emptyState : StoreState := mkState ctx_empty (fun _ _ => emptyRecord).

Definition slot_at (s : StoreState) (c i : string) (k : SlotKey) : Slot :=
  slots (collections s c i) k.

(** [func record(_ ref: RecordRef) -> Record?] *)
Definition record (s : StoreState) (ref : RecordRef) : StoreRecord :=
  collections s (ref_collection ref) (ref_id ref).

(** The effective context of a slot: [context.contains($0) || (scope?.contains($0) ?? false)]. *)
Definition seenBy (ctx : CausalContext) (sl : Slot) : CausalContext :=
  fun d => ctx d || scope sl d.

(** [static func joinSlots(_ left:, _ leftContext:, _ right:, _ rightContext:, into context:)] *)
Definition joinSlots (left : Slot) (leftContext : CausalContext)
                     (right : Slot) (rightContext : CausalContext)
                     (context : CausalContext) : Slot :=
  mkSlot (dotstore_join dot (entries left) (seenBy leftContext left)
                            (entries right) (seenBy rightContext right))
         (ctx_subtracting (ctx_union (scope left) (scope right)) context).

(** [static func joinRecords(_ left:, _ leftContext:, _ right:, _ rightContext:, into context:)] *)
Definition joinRecords (left : StoreRecord) (leftContext : CausalContext)
                       (right : StoreRecord) (rightContext : CausalContext)
                       (context : CausalContext) : StoreRecord :=
  mkRecord (fun k => joinSlots (slots left k) leftContext (slots right k) rightContext context).

(** [func joined(_ other: StoreState) -> StoreState] *)
Definition joined (self other : StoreState) : StoreState :=
  let ctx := ctx_union (context self) (context other) in
  mkState ctx (fun c i => joinRecords (collections self c i) (context self)
                                      (collections other c i) (context other) ctx).

Lemma slot_at_joined a b c i k :
  slot_at (joined a b) c i k =
  joinSlots (slot_at a c i k) (context a) (slot_at b c i k) (context b)
            (ctx_union (context a) (context b)).
Proof. reflexivity. Qed.

(** ** Equality and well-formedness *)

Definition slot_eq (a b : Slot) : Prop := entries a = entries b /\ ctx_eq (scope a) (scope b).

Definition record_eq (a b : StoreRecord) : Prop := forall k, slot_eq (slots a k) (slots b k).

Definition state_eq (a b : StoreState) : Prop :=
  ctx_eq (context a) (context b) /\
  forall c i, record_eq (collections a c i) (collections b c i).

(** [_checkInvariants()], per slot under the context of its state: entries sorted by
    dot, every entry's dot in the slot's effective context, the scope disjoint from the
    context. *)
Definition slot_wf (ctx : CausalContext) (sl : Slot) : Prop :=
  ordered dot (entries sl) /\
  (forall e, In e (entries sl) -> seenBy ctx sl (dot e) = true) /\
  (forall d, scope sl d = true -> ctx d = false).

Definition record_wf (ctx : CausalContext) (r : StoreRecord) : Prop :=
  forall k, slot_wf ctx (slots r k).

Definition state_wf (s : StoreState) : Prop :=
  forall c i, record_wf (context s) (collections s c i).

(** Dot uniqueness between two states: an entry both hold at one dot in one slot is the
    same entry (a dot names one write, which puts one payload in each slot). *)
Definition compatible (a b : StoreState) : Prop :=
  forall c i k, agree dot (entries (slot_at a c i k)) (entries (slot_at b c i k)).

Lemma slot_eq_refl a : slot_eq a a.
Proof. split; [reflexivity | apply ctx_eq_refl]. Qed.

Lemma slot_eq_sym a b : slot_eq a b -> slot_eq b a.
Proof. intros [H1 H2]; split; [symmetry; assumption | apply ctx_eq_sym; assumption]. Qed.

Lemma slot_eq_trans a b c : slot_eq a b -> slot_eq b c -> slot_eq a c.
Proof.
  intros [H1 H2] [H3 H4]; split; [congruence | eapply ctx_eq_trans; eassumption].
Qed.

Lemma state_eq_refl a : state_eq a a.
Proof. split; [apply ctx_eq_refl | intros c i k; apply slot_eq_refl]. Qed.

Lemma state_eq_sym a b : state_eq a b -> state_eq b a.
Proof.
  intros [H1 H2]; split; [apply ctx_eq_sym; assumption|].
  intros c i k; apply slot_eq_sym, H2.
Qed.

Lemma state_eq_trans a b c : state_eq a b -> state_eq b c -> state_eq a c.
Proof.
  intros [H1 H2] [H3 H4]; split; [eapply ctx_eq_trans; eassumption|].
  intros c' i k; eapply slot_eq_trans; [apply H2 | apply H4].
Qed.

Ltac bool_cases :=
  repeat match goal with
  | |- context [?c ?d] =>
      match type of c with CausalContext => destruct (c d) end
  end; reflexivity.

(** ** The slot join is a join-semilattice — the core lemma *)

Lemma seenBy_joinSlots a ca b cb d :
  seenBy (ctx_union ca cb) (joinSlots a ca b cb (ctx_union ca cb)) d =
  ctx_union (seenBy ca a) (seenBy cb b) d.
Proof.
  unfold seenBy, joinSlots, ctx_union, ctx_subtracting; cbn [scope].
  destruct (ca d), (cb d), (scope a d), (scope b d); reflexivity.
Qed.

Theorem joinSlots_comm a ca b cb :
  slot_wf ca a -> slot_wf cb b -> agree dot (entries a) (entries b) ->
  slot_eq (joinSlots a ca b cb (ctx_union ca cb)) (joinSlots b cb a ca (ctx_union cb ca)).
Proof.
  intros [Ha _] [Hb _] Hab. split; cbn [entries scope joinSlots].
  - apply dotstore_join_comm; assumption.
  - intro d. unfold ctx_subtracting, ctx_union.
    destruct (scope a d), (scope b d), (ca d), (cb d); reflexivity.
Qed.

Theorem joinSlots_assoc a ca b cb c cc :
  slot_wf ca a -> slot_wf cb b -> slot_wf cc c ->
  slot_eq (joinSlots (joinSlots a ca b cb (ctx_union ca cb)) (ctx_union ca cb) c cc
                     (ctx_union (ctx_union ca cb) cc))
          (joinSlots a ca (joinSlots b cb c cc (ctx_union cb cc)) (ctx_union cb cc)
                     (ctx_union ca (ctx_union cb cc))).
Proof.
  intros [Ha _] [Hb _] [Hc _]. split.
  - unfold joinSlots at 1 3. cbn [entries].
    rewrite (dotstore_join_ctx_ext dot _ _ (ctx_union (seenBy ca a) (seenBy cb b)) (seenBy cc c))
      by (first [intro; apply seenBy_joinSlots | apply ctx_eq_refl]).
    rewrite (dotstore_join_ctx_ext dot (seenBy ca a) _ (seenBy ca a) (ctx_union (seenBy cb b) (seenBy cc c)))
      by (first [intro; apply seenBy_joinSlots | apply ctx_eq_refl]).
    apply dotstore_join_assoc; assumption.
  - intro d. unfold joinSlots, ctx_subtracting, ctx_union; cbn [scope].
    destruct (scope a d), (scope b d), (scope c d), (ca d), (cb d), (cc d); reflexivity.
Qed.

Theorem joinSlots_idem a ca : slot_wf ca a -> slot_eq (joinSlots a ca a ca (ctx_union ca ca)) a.
Proof.
  intros [Ha [_ Hs]]. split; cbn [entries scope joinSlots].
  - apply dotstore_join_idem; assumption.
  - intro d. unfold ctx_subtracting, ctx_union.
    destruct (scope a d) eqn:E; [rewrite (Hs d E); reflexivity|]. reflexivity.
Qed.

Lemma joinSlots_wf a ca b cb :
  slot_wf ca a -> slot_wf cb b -> slot_wf (ctx_union ca cb) (joinSlots a ca b cb (ctx_union ca cb)).
Proof.
  intros [Ha [Ha' _]] [Hb [Hb' _]]. split; [|split].
  - apply dotstore_join_ordered; assumption.
  - intros e He. rewrite seenBy_joinSlots. unfold ctx_union.
    apply dotstore_join_incl in He as [He|He].
    + rewrite Ha'; auto.
    + rewrite Hb'; auto using orb_true_r.
  - intros d. unfold joinSlots, ctx_subtracting; cbn [scope].
    destruct (ctx_union ca cb d); [|reflexivity]. rewrite andb_false_r. discriminate.
Qed.

Lemma joinSlots_congr a a' ca ca' b b' cb cb' c c' :
  slot_eq a a' -> slot_eq b b' -> ctx_eq ca ca' -> ctx_eq cb cb' -> ctx_eq c c' ->
  slot_eq (joinSlots a ca b cb c) (joinSlots a' ca' b' cb' c').
Proof.
  intros [Ha Has] [Hb Hbs] Hca Hcb Hc. split; cbn [entries scope joinSlots].
  - rewrite Ha, Hb. apply dotstore_join_ctx_ext; intro d; unfold seenBy;
      [rewrite Hca, Has | rewrite Hcb, Hbs]; reflexivity.
  - intro d. unfold ctx_subtracting, ctx_union. rewrite Has, Hbs, Hc. reflexivity.
Qed.

(** ** The record join: the slot join, key by key *)

Theorem joinRecords_comm a ca b cb :
  record_wf ca a -> record_wf cb b ->
  (forall k, agree dot (entries (slots a k)) (entries (slots b k))) ->
  record_eq (joinRecords a ca b cb (ctx_union ca cb)) (joinRecords b cb a ca (ctx_union cb ca)).
Proof. intros Ha Hb Hab k. apply joinSlots_comm; auto. Qed.

Theorem joinRecords_assoc a ca b cb c cc :
  record_wf ca a -> record_wf cb b -> record_wf cc c ->
  record_eq (joinRecords (joinRecords a ca b cb (ctx_union ca cb)) (ctx_union ca cb) c cc
                         (ctx_union (ctx_union ca cb) cc))
            (joinRecords a ca (joinRecords b cb c cc (ctx_union cb cc)) (ctx_union cb cc)
                         (ctx_union ca (ctx_union cb cc))).
Proof. intros Ha Hb Hc k. apply joinSlots_assoc; auto. Qed.

Theorem joinRecords_idem a ca : record_wf ca a -> record_eq (joinRecords a ca a ca (ctx_union ca ca)) a.
Proof. intros Ha k. apply joinSlots_idem; auto. Qed.

(** ** The store state is a join-semilattice (rule 8) *)

Theorem joined_comm a b :
  state_wf a -> state_wf b -> compatible a b -> state_eq (joined a b) (joined b a).
Proof.
  intros Ha Hb Hab. split.
  - apply ctx_union_comm.
  - intros c i. apply joinRecords_comm; auto. intro k; apply Hab.
Qed.

Theorem joined_assoc a b c :
  state_wf a -> state_wf b -> state_wf c ->
  state_eq (joined (joined a b) c) (joined a (joined b c)).
Proof.
  intros Ha Hb Hc. split.
  - apply ctx_union_assoc.
  - intros c' i. apply joinRecords_assoc; auto.
Qed.

Theorem joined_idem a : state_wf a -> state_eq (joined a a) a.
Proof.
  intros Ha. split.
  - apply ctx_union_idem.
  - intros c i. apply joinRecords_idem; auto.
Qed.

Lemma joined_wf a b : state_wf a -> state_wf b -> state_wf (joined a b).
Proof. intros Ha Hb c i k. apply joinSlots_wf; [apply Ha | apply Hb]. Qed.

Lemma joined_congr a a' b b' :
  state_eq a a' -> state_eq b b' -> state_eq (joined a b) (joined a' b').
Proof.
  intros [Ha Ha'] [Hb Hb']. split.
  - intro d; cbn [joined context]; unfold ctx_union; rewrite Ha, Hb; reflexivity.
  - intros c i k. apply joinSlots_congr; [apply Ha' | apply Hb' | assumption | assumption |].
    intro d; unfold ctx_union; rewrite Ha, Hb; reflexivity.
Qed.

Lemma compatible_joined_l a b z :
  compatible a z -> compatible b z -> compatible (joined a b) z.
Proof. intros Ha Hb c i k. apply agree_join; [apply Ha | apply Hb]. Qed.

Lemma compatible_sym a b : compatible a b -> compatible b a.
Proof. intros H c i k. apply agree_sym, H. Qed.

Lemma compatible_joined_r a b z :
  compatible z a -> compatible z b -> compatible z (joined a b).
Proof.
  intros Ha Hb. apply compatible_sym, compatible_joined_l; apply compatible_sym; assumption.
Qed.

Lemma compatible_refl_wf a : state_wf a -> compatible a a.
Proof.
  intros Ha c i k x y Hx Hy Hd. destruct (Ha c i k) as [Ho _].
  apply (lookup_ordered_in dot) in Hx; [|assumption].
  apply (lookup_ordered_in dot) in Hy; [|assumption]. congruence.
Qed.

Lemma state_wf_ext a b : state_eq a b -> state_wf a -> state_wf b.
Proof.
  intros [Hc Hs] Ha c i k. destruct (Ha c i k) as [H1 [H2 H3]]. destruct (Hs c i k) as [He Hsc].
  split; [|split].
  - rewrite <- He; assumption.
  - intros e Hin. rewrite <- He in Hin. unfold seenBy. rewrite <- Hc, <- Hsc. apply H2; assumption.
  - intros d Hd. rewrite <- Hc. apply H3. rewrite Hsc; assumption.
Qed.

Lemma compatible_ext a a' b : state_eq a a' -> compatible a b -> compatible a' b.
Proof.
  intros [_ Hs] H c i k. destruct (Hs c i k) as [He _]. unfold slot_at. rewrite <- He. apply H.
Qed.

Lemma emptyState_wf : state_wf emptyState.
Proof.
  intros c i k. split; [|split]; cbn.
  - constructor.
  - intros e [].
  - intros d H; discriminate.
Qed.
