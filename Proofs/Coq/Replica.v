(** * Replica.v — local writes, the outbox and sealing.

    Mirrors [Sources/ConcordCore/Replica/Replica.swift]: every mutation takes one dot
    from the clock ([nextDot]), replaces slots (each replaced slot enters the outbox),
    and [seal] turns the outbox into a [Delta] carrying the current entries of every
    touched slot.

    Modelling choices.
    - The outbox [Set<SlotRef>] is a predicate on slots.  Loops over
      [record.slots.keys] ([clearRecord], [clearElements]) replace, at once, every slot
      of the record that is stored (has entries: a replica's own state has no scopes).
    - [nextDot] ticks the clock (at [now], with the lead [HLC.maxLead]) and inserts
      [0 ... dot.hlc] for the replica; when [tick] throws [clockExhausted] it is [None], and
      so is every mutation (Swift throws before changing anything but the clock).  Swift
      first calls [clock.pass(state.context.maxHLC(for: id))]; that maximum is not a
      function of a context-as-set, so instead the theorems assume what the Swift replica
      maintains: its clock has issued (or passed) every own hlc in its context
      ([pd_own] / [sr_own]) — then [pass] changes nothing ([nextDot_pass]) — and has
      observed every hlc in its context ([pd_clock] / [sr_clock]; [Replica.apply] and
      [join(snapshot:)] call [clock.observe]).
    - A stamp is above everything the replica had seen only when its clock follows what
      it observed at [now] ([within_lead]: within [HLC.maxLead] of [now]); beyond it a
      new dot can be below another replica's liveness dot, so [touchLiveness] inserts it
      in dot order, and the local writes keep their slots sorted at any [now].
    - [makeDelta] takes the [coveredVector] of the context and its [maxHLC(for: id)]
      as arguments; the theorems pass the values the ranges give. *)

From Coq Require Import Arith Lia Bool List String Sorted.
From Concord Require Import Stamp Context DotStore Values StoreState Delta.
Import ListNotations.

(** [struct Replica { id; state; clock; outbox: Set<SlotRef>; sealedSeq; sealedUpTo }] *)
Record Replica := mkReplica {
  rep_id : ReplicaID;
  rep_state : StoreState;
  rep_clock : HybridLogicalClock;
  rep_outbox : string -> string -> SlotKey -> bool;
  rep_sealedSeq : nat;
  rep_sealedUpTo : nat
}.

(** [enum FieldWrite { case scalar(ScalarValue); case file(FileRef); case set([ScalarValue]) }] *)
Inductive FieldWrite :=
| FWScalar (v : ScalarValue)
| FWFile (f : FileRef)
| FWSet (elements : list ScalarValue).

Definition SlotPred := string -> string -> SlotKey -> bool.

(** [private mutating func replace(_ slot: SlotRef, with entries: [Entry])], for every
    slot satisfying [P] at once: the slot gets [f] (no scope) and enters the outbox. *)
Definition replace_where (r : Replica) (P : SlotPred) (f : string -> string -> SlotKey -> list Entry)
  : Replica :=
  mkReplica (rep_id r)
    (mkState (context (rep_state r))
       (fun c i => mkRecord (fun k => if P c i k then mkSlot (f c i k) ctx_empty
                                      else slot_at (rep_state r) c i k)))
    (rep_clock r)
    (fun c i k => rep_outbox r c i k || P c i k)
    (rep_sealedSeq r) (rep_sealedUpTo r).

Definition at_slot (ref : RecordRef) (key : SlotKey) : SlotPred :=
  fun c i k => is_ref ref c i && slotkey_eqb key k.

Definition replace (r : Replica) (ref : RecordRef) (key : SlotKey) (es : list Entry) : Replica :=
  replace_where r (at_slot ref key) (fun _ _ _ => es).

(** A slot is stored when it has entries (own states carry no scopes). *)
Definition stored (s : StoreState) (c i : string) (k : SlotKey) : bool :=
  match entries (slot_at s c i k) with [] => false | _ => true end.

(** [Record.isVisible]: a liveness dot survives. *)
Definition isVisible (rec : StoreRecord) : bool :=
  match entries (slots rec Liveness) with [] => false | _ => true end.

(** [Record.hasDeleteUpdateConflict]: visible, and a tombstone survives. *)
Definition hasDeleteUpdateConflict (rec : StoreRecord) : bool :=
  isVisible rec && match entries (slots rec Tombstones) with [] => false | _ => true end.

(** [private mutating func nextDot(now:) throws -> Stamp] ([None]: [clock.tick] throws
    [clockExhausted]); the [clock.pass] before the tick is an invariant, see above. *)
Definition nextDot (r : Replica) (now : nat) : option (Replica * Stamp) :=
  match tick (rep_clock r) now maxLead with
  | Some (clock, h) =>
      Some (mkReplica (rep_id r)
              (mkState (ctx_insert_range (context (rep_state r)) 0 h (rep_id r))
                       (collections (rep_state r)))
              clock (rep_outbox r) (rep_sealedSeq r) (rep_sealedUpTo r),
            mkStamp h (rep_id r))
  | None => None
  end.

(** [private mutating func clearRecord(_ ref:, keepingLiveness:)] *)
Definition clearRecord (r : Replica) (ref : RecordRef) (keepingLiveness : bool) : Replica :=
  replace_where r (fun c i k => is_ref ref c i && stored (rep_state r) c i k &&
                                negb (keepingLiveness && slotkey_eqb k Liveness))
                (fun _ _ _ => []).

(** [entries.insert(entry, at: entries.firstIndex { dot < $0.dot } ?? entries.endIndex)]
    in [touchLiveness]: [e] goes before the first entry whose dot is greater than its own. *)
Fixpoint insert_by_dot (e : Entry) (l : list Entry) : list Entry :=
  match l with
  | [] => [e]
  | x :: l' => if stamp_ltb (dot e) (dot x) then e :: l else x :: insert_by_dot e l'
  end.

(** [private mutating func touchLiveness(_ ref:, dot:)] *)
Definition touchLiveness (r : Replica) (ref : RecordRef) (d : Stamp) : Replica :=
  let current := entries (slots (record (rep_state r) ref) Liveness) in
  let others := filter (fun e => negb (Nat.eqb (replica (dot e)) (rep_id r))) current in
  replace r ref Liveness (insert_by_dot (mkEntry d Marker) others).

(** [private mutating func beginWrite(_ ref:, now:) throws -> Stamp] *)
Definition beginWrite (r : Replica) (ref : RecordRef) (now : nat) : option (Replica * Stamp) :=
  match nextDot r now with
  | Some (r1, d) =>
      let r2 := if isVisible (record (rep_state r1) ref) then r1 else clearRecord r1 ref true in
      Some (touchLiveness r2 ref d, d)
  | None => None
  end.

(** [private mutating func clearRegister(_ name:, of ref:)] *)
Definition clearRegister (r : Replica) (name : string) (ref : RecordRef) : Replica :=
  if stored (rep_state r) (ref_collection ref) (ref_id ref) (Field name)
  then replace r ref (Field name) [] else r.

Definition is_element_of (name : string) (k : SlotKey) : bool :=
  match k with Element n _ => String.eqb n name | _ => false end.

(** [private mutating func clearElements(_ name:, of ref:)] *)
Definition clearElements (r : Replica) (name : string) (ref : RecordRef) : Replica :=
  replace_where r (fun c i k => is_ref ref c i && is_element_of name k && stored (rep_state r) c i k)
                (fun _ _ _ => []).

Definition element_in (name : string) (elements : list ScalarValue) (k : SlotKey) : bool :=
  match k with
  | Element n v => String.eqb n name &&
                   existsb (fun x => if ScalarValue_eq_dec x v then true else false) elements
  | _ => false
  end.

(** [private mutating func apply(_ write: FieldWrite, to name:, of ref:, dot:)] *)
Definition applyWrite (r : Replica) (w : FieldWrite) (name : string) (ref : RecordRef) (d : Stamp)
  : Replica :=
  match w with
  | FWScalar v => replace (clearElements r name ref) ref (Field name) [mkEntry d (PScalar v)]
  | FWFile f => replace (clearElements r name ref) ref (Field name) [mkEntry d (PFile f)]
  | FWSet elements =>
      replace_where (clearElements (clearRegister r name ref) name ref)
                    (fun c i k => is_ref ref c i && element_in name elements k)
                    (fun _ _ _ => [mkEntry d Marker])
  end.

(** [for (name, write) in fields { apply(write, to: name, of: ref, dot: dot) }] *)
Definition applyWrites (r : Replica) (fields : list (string * FieldWrite)) (ref : RecordRef)
                       (d : Stamp) : Replica :=
  fold_left (fun r' nw => applyWrite r' (snd nw) (fst nw) ref d) fields r.

(** [mutating func put(_ ref:, _ fields:, now:) throws -> Stamp] *)
Definition put (r : Replica) (ref : RecordRef) (fields : list (string * FieldWrite)) (now : nat)
  : option (Replica * Stamp) :=
  match beginWrite r ref now with
  | Some (r1, d) => Some (applyWrites r1 fields ref d, d)
  | None => None
  end.

(** [mutating func set(_ ref:, _ field:, _ value:, now:) throws] *)
Definition set (r : Replica) (ref : RecordRef) (field : string) (v : ScalarValue) (now : nat) :=
  put r ref [(field, FWScalar v)] now.

(** [mutating func setFile(_ ref:, _ field:, _ file:, now:) throws] *)
Definition setFile (r : Replica) (ref : RecordRef) (field : string) (f : FileRef) (now : nat) :=
  put r ref [(field, FWFile f)] now.

(** [func Record.fileVersions(_ name:)] *)
Definition fileVersions (rec : StoreRecord) (name : string) : list (Stamp * FileRef) :=
  flat_map (fun e => match payload e with PFile f => [(dot e, f)] | _ => [] end)
           (entries (slots rec (Field name))).

(** [mutating func keepVersion(_ ref:, _ field:, hash:, now:) throws -> Stamp]
    ([None]: the Swift function throws: no such version, or [clockExhausted]). *)
Definition keepVersion (r : Replica) (ref : RecordRef) (field : string) (h : ContentHash) (now : nat)
  : option (Replica * Stamp) :=
  match find (fun v => hash_eqb (hash (snd v)) h) (rev (fileVersions (record (rep_state r) ref) field)) with
  | Some v => setFile r ref field (snd v) now
  | None => None
  end.

(** [mutating func add(_ ref:, _ field:, _ element:, now:) throws] *)
Definition add (r : Replica) (ref : RecordRef) (field : string) (element : ScalarValue) (now : nat)
  : option (Replica * Stamp) :=
  match beginWrite r ref now with
  | Some (r1, d) => Some (replace (clearRegister r1 field ref) ref (Element field element) [mkEntry d Marker], d)
  | None => None
  end.

(** [mutating func remove(_ ref:, _ field:, _ element:, now:) throws] *)
Definition remove (r : Replica) (ref : RecordRef) (field : string) (element : ScalarValue) (now : nat)
  : option (Replica * Stamp) :=
  match beginWrite r ref now with
  | Some (r1, d) => Some (replace r1 ref (Element field element) [], d)
  | None => None
  end.

(** [mutating func create(_ ref:, _ fields:, now:) throws] *)
Definition create (r : Replica) (ref : RecordRef) (fields : list (string * FieldWrite)) (now : nat)
  : option (Replica * Stamp) :=
  match nextDot r now with
  | Some (r1, d) => Some (applyWrites (touchLiveness (clearRecord r1 ref false) ref d) fields ref d, d)
  | None => None
  end.

(** [mutating func delete(_ ref:, now:) throws] *)
Definition delete (r : Replica) (ref : RecordRef) (now : nat) : option (Replica * Stamp) :=
  match nextDot r now with
  | Some (r1, d) => Some (replace (replace r1 ref Liveness []) ref Tombstones [mkEntry d Marker], d)
  | None => None
  end.

(** [mutating func keepRecord(_ ref:, now:) throws] *)
Definition keepRecord (r : Replica) (ref : RecordRef) (now : nat) : option (Replica * Stamp) :=
  match beginWrite r ref now with
  | Some (r1, d) => Some (replace r1 ref Tombstones [], d)
  | None => None
  end.

(** [private func makeDelta(seq:) -> Delta], given [coveredVector] and
    [maxHLC(for: id)] of the context. *)
Definition makeDelta (r : Replica) (covered : VersionVector) (ownMax : nat) (seq : nat) : Delta :=
  mkDelta (rep_id r) seq (vv_set covered (rep_id r) (rep_sealedUpTo r)) ownMax
          (fun c i k => if rep_outbox r c i k then Some (entries (slot_at (rep_state r) c i k))
                        else None)
          (fun _ _ => false).

(** [mutating func seal() -> Delta?] (called with a non-empty outbox). *)
Definition seal (r : Replica) (covered : VersionVector) (ownMax : nat) : Replica * Delta :=
  let delta := makeDelta r covered ownMax (S (rep_sealedSeq r)) in
  (mkReplica (rep_id r) (rep_state r) (rep_clock r) (fun _ _ _ => false) (seq delta) (upTo delta),
   delta).

(** ** The invariant between two seals *)

(** A replica state right after a seal: its context is the version vector [V], no
    scopes, well-formed, positive clock values. *)
Record sealed_base (s0 : StoreState) (V : VersionVector) : Prop := {
  sb_ctx : ctx_eq (context s0) (ctx_of_vv V);
  sb_noscopes : noScopes s0;
  sb_wf : state_wf s0;
  sb_pos : positive s0
}.

(** The replica [r] is [s0] plus local writes with dots [(h, id)], [V[id] < h <= u],
    every changed slot in the outbox. *)
Record Pending (s0 : StoreState) (V : VersionVector) (u : nat) (r : Replica) : Prop := {
  pd_ctx : ctx_eq (context (rep_state r)) (ctx_of_vv (vv_set V (rep_id r) u));
  pd_u : V (rep_id r) <= u;
  pd_untouched : forall c i k, rep_outbox r c i k = false ->
                 slot_at (rep_state r) c i k = slot_at s0 c i k;
  pd_entries : forall c i k e, In e (entries (slot_at (rep_state r) c i k)) ->
               In e (entries (slot_at s0 c i k)) \/
               (replica (dot e) = rep_id r /\ V (rep_id r) < hlc (dot e) /\ hlc (dot e) <= u);
  pd_ordered : forall c i k, ordered dot (entries (slot_at (rep_state r) c i k));
  pd_noscopes : noScopes (rep_state r);
  pd_own : forall x, context (rep_state r) x = true -> replica x = rep_id r ->
           hlc x <= latest (rep_clock r);
  pd_clock : forall x, context (rep_state r) x = true -> hlc x <= clock_observed (rep_clock r);
  pd_sealed : rep_sealedUpTo r = V (rep_id r)
}.

(** A replica that has just sealed, whose clock has passed its own dots and observed its
    whole context, and has not issued [UInt64.max]. *)
Record sealed_replica (r : Replica) (V : VersionVector) : Prop := {
  sr_base : sealed_base (rep_state r) V;
  sr_outbox : forall c i k, rep_outbox r c i k = false;
  sr_sealed : rep_sealedUpTo r = V (rep_id r);
  sr_own : forall x, context (rep_state r) x = true -> replica x = rep_id r ->
           hlc x <= latest (rep_clock r);
  sr_clock : forall x, context (rep_state r) x = true -> hlc x <= clock_observed (rep_clock r);
  sr_room : latest (rep_clock r) < uint64Max
}.

(** At [now] the replica's clock follows everything it observed: a write then takes a
    stamp above every stamp the replica had seen.  Swift calls [tick] with the default
    lead [HLC.maxLead]. *)
Definition within_lead (r : Replica) (now : nat) : Prop := follows (rep_clock r) now maxLead.

Definition new_ok (s0 : StoreState) (V : VersionVector) (id : ReplicaID) (u : nat)
                  (c i : string) (k : SlotKey) (es : list Entry) : Prop :=
  ordered dot es /\
  forall e, In e es -> In e (entries (slot_at s0 c i k)) \/
                       (replica (dot e) = id /\ V id < hlc (dot e) /\ hlc (dot e) <= u).

Lemma replace_where_slot r P f c i k :
  slot_at (rep_state (replace_where r P f)) c i k =
  if P c i k then mkSlot (f c i k) ctx_empty else slot_at (rep_state r) c i k.
Proof. reflexivity. Qed.

Lemma at_slot_true ref key c i k :
  at_slot ref key c i k = true -> c = ref_collection ref /\ i = ref_id ref /\ k = key.
Proof.
  unfold at_slot. rewrite andb_true_iff. intros [H1 H2]. apply is_ref_true in H1 as [-> ->].
  destruct (slotkey_eqb_spec key k); [subst; auto | discriminate].
Qed.

Lemma at_slot_refl ref key : at_slot ref key (ref_collection ref) (ref_id ref) key = true.
Proof. unfold at_slot. rewrite is_ref_refl, slotkey_eqb_refl. reflexivity. Qed.

Lemma vv_set_same_point V id : forall r, vv_set V id (V id) r = V r.
Proof. intro r. unfold vv_set. destruct (Nat.eqb_spec r id); subst; reflexivity. Qed.

Lemma ctx_of_vv_ext V W : (forall r, V r = W r) -> ctx_eq (ctx_of_vv V) (ctx_of_vv W).
Proof. intros H x. unfold ctx_of_vv. rewrite H. reflexivity. Qed.

Lemma sealed_pending r V : sealed_replica r V -> Pending (rep_state r) V (V (rep_id r)) r.
Proof.
  intros [Hb Ho Hs Hown Hc _]. constructor.
  - eapply ctx_eq_trans; [apply (sb_ctx _ _ Hb)|]. apply ctx_of_vv_ext.
    intro; symmetry; apply vv_set_same_point.
  - lia.
  - intros; reflexivity.
  - intros c i k e He. left; assumption.
  - intros c i k. destruct (sb_wf _ _ Hb c i k); assumption.
  - apply (sb_noscopes _ _ Hb).
  - exact Hown.
  - exact Hc.
  - exact Hs.
Qed.

Lemma pending_replace_where s0 V u r P f :
  Pending s0 V u r ->
  (forall c i k, P c i k = true -> new_ok s0 V (rep_id r) u c i k (f c i k)) ->
  Pending s0 V u (replace_where r P f).
Proof.
  intros Hp Hf. constructor; cbn [rep_id rep_state rep_clock rep_outbox rep_sealedUpTo context].
  - apply (pd_ctx _ _ _ _ Hp).
  - apply (pd_u _ _ _ _ Hp).
  - intros c i k Ho. apply orb_false_iff in Ho as [Ho HP]. rewrite replace_where_slot, HP.
    apply (pd_untouched _ _ _ _ Hp); assumption.
  - intros c i k e. rewrite replace_where_slot. destruct (P c i k) eqn:HP.
    + apply (Hf c i k HP).
    + apply (pd_entries _ _ _ _ Hp).
  - intros c i k. rewrite replace_where_slot. destruct (P c i k) eqn:HP.
    + apply (Hf c i k HP).
    + apply (pd_ordered _ _ _ _ Hp).
  - intros c i k x. change (scope (slot_at (rep_state (replace_where r P f)) c i k) x = ctx_empty x).
    rewrite replace_where_slot. destruct (P c i k); [reflexivity|]. apply (pd_noscopes _ _ _ _ Hp).
  - apply (pd_own _ _ _ _ Hp).
  - apply (pd_clock _ _ _ _ Hp).
  - apply (pd_sealed _ _ _ _ Hp).
Qed.

Lemma new_ok_nil s0 V id u c i k : new_ok s0 V id u c i k [].
Proof. split; [constructor | intros e []]. Qed.

Lemma new_ok_own s0 V id u c i k d p :
  replica d = id -> V id < hlc d -> hlc d <= u -> new_ok s0 V id u c i k [mkEntry d p].
Proof.
  intros H1 H2 H3. split; [repeat constructor|]. intros e [<-|[]]. right; cbn; auto.
Qed.

Lemma pending_clear s0 V u r P :
  Pending s0 V u r -> Pending s0 V u (replace_where r P (fun _ _ _ => [])).
Proof. intro Hp. apply pending_replace_where; [assumption|]. intros; apply new_ok_nil. Qed.

Lemma pending_own s0 V u r P d p :
  Pending s0 V u r -> replica d = rep_id r -> V (rep_id r) < hlc d -> hlc d <= u ->
  Pending s0 V u (replace_where r P (fun _ _ _ => [mkEntry d p])).
Proof. intros Hp H1 H2 H3. apply pending_replace_where; [assumption|]. intros; apply new_ok_own; auto. Qed.

(** Every entry of a pending replica lies in its context. *)
Lemma pending_entries_ctx s0 V u r c i k e :
  sealed_base s0 V -> Pending s0 V u r ->
  In e (entries (slot_at (rep_state r) c i k)) -> context (rep_state r) (dot e) = true.
Proof.
  intros Hb Hp He. rewrite (pd_ctx _ _ _ _ Hp). apply ctx_of_vv_spec. unfold vv_set.
  pose proof (pd_u _ _ _ _ Hp) as Hu.
  destruct (pd_entries _ _ _ _ Hp c i k e He) as [H0|[H1 [H2 H3]]].
  - destruct (sb_wf _ _ Hb c i k) as [_ [Hs _]]. specialize (Hs e H0). unfold seenBy in Hs.
    change (slots (collections s0 c i) k) with (slot_at s0 c i k) in Hs.
    rewrite (sb_noscopes _ _ Hb c i k (dot e)), orb_false_r, (sb_ctx _ _ Hb) in Hs.
    apply ctx_of_vv_spec in Hs.
    destruct (Nat.eqb_spec (replica (dot e)) (rep_id r)) as [E|E]; [rewrite E in Hs|]; lia.
  - rewrite H1, Nat.eqb_refl. lia.
Qed.

Lemma nextDot_inv r now r1 d :
  nextDot r now = Some (r1, d) ->
  tick (rep_clock r) now maxLead = Some (rep_clock r1, hlc d) /\ replica d = rep_id r /\
  r1 = mkReplica (rep_id r)
         (mkState (ctx_insert_range (context (rep_state r)) 0 (hlc d) (rep_id r))
                  (collections (rep_state r)))
         (rep_clock r1) (rep_outbox r) (rep_sealedSeq r) (rep_sealedUpTo r).
Proof.
  unfold nextDot. destruct (tick (rep_clock r) now maxLead) as [[c h]|] eqn:E; [|discriminate].
  intro H. inversion H; subst. cbn [rep_clock hlc replica]. auto.
Qed.

(** [nextDot] throws exactly when the clock has issued [UInt64.max]. *)
Lemma nextDot_fails r now : nextDot r now = None <-> uint64Max <= latest (rep_clock r).
Proof.
  rewrite <- (tick_fails (rep_clock r) now maxLead). unfold nextDot.
  destruct (tick (rep_clock r) now maxLead) as [[c h]|]; split; intro H;
    solve [discriminate | reflexivity].
Qed.

Lemma nextDot_slot r now r1 d c i k :
  nextDot r now = Some (r1, d) -> slot_at (rep_state r1) c i k = slot_at (rep_state r) c i k.
Proof. intro E. apply nextDot_inv in E as [_ [_ ->]]. reflexivity. Qed.

Lemma nextDot_collections r now r1 d :
  nextDot r now = Some (r1, d) -> collections (rep_state r1) = collections (rep_state r).
Proof. intro E. apply nextDot_inv in E as [_ [_ ->]]. reflexivity. Qed.

Lemma nextDot_outbox r now r1 d : nextDot r now = Some (r1, d) -> rep_outbox r1 = rep_outbox r.
Proof. intro E. apply nextDot_inv in E as [_ [_ ->]]. reflexivity. Qed.

Lemma nextDot_id r now r1 d : nextDot r now = Some (r1, d) -> rep_id r1 = rep_id r.
Proof. intro E. apply nextDot_inv in E as [_ [_ ->]]. reflexivity. Qed.

(** Swift's [clock.pass(state.context.maxHLC(for: id))] changes nothing on a pending
    replica: its own dots are [0 ... u] ([u = maxHLC(for: id)]), and its clock has passed
    [u] already.  So [nextDot] models the Swift function exactly there. *)
Lemma nextDot_pass s0 V u r : Pending s0 V u r -> pass (rep_clock r) u = rep_clock r.
Proof.
  intro Hp. destruct u as [|u'].
  - apply pass_id; lia.
  - assert (Hx : context (rep_state r) (mkStamp (S u') (rep_id r)) = true).
    { rewrite (pd_ctx _ _ _ _ Hp). apply ctx_of_vv_spec; cbn. rewrite vv_set_same. lia. }
    apply pass_id; [apply (pd_own _ _ _ _ Hp _ Hx eq_refl) | apply (pd_clock _ _ _ _ Hp _ Hx)].
Qed.

Lemma pending_nextDot s0 V u r now r1 d :
  Pending s0 V u r -> nextDot r now = Some (r1, d) ->
  Pending s0 V (hlc d) r1 /\ replica d = rep_id r /\ u < hlc d /\ rep_id r1 = rep_id r /\
  (forall x, context (rep_state r) x = true -> replica x = rep_id r -> hlc x < hlc d).
Proof.
  intros Hp E. destruct (nextDot_inv r now r1 d E) as [Ht [Hrep Hr1]].
  pose proof (tick_gt_latest _ _ _ _ _ Ht) as Hgt.
  pose proof (tick_latest _ _ _ _ _ Ht) as Hl.
  pose proof (tick_observed _ _ _ _ _ Ht) as Ho.
  assert (Hu : u <= latest (rep_clock r)).
  { destruct u as [|u']; [lia|].
    apply (pd_own _ _ _ _ Hp (mkStamp (S u') (rep_id r))); [|reflexivity].
    rewrite (pd_ctx _ _ _ _ Hp). apply ctx_of_vv_spec; cbn. rewrite vv_set_same. lia. }
  assert (Hown : forall x, context (rep_state r) x = true -> replica x = rep_id r -> hlc x < hlc d).
  { intros x Hx Hr. pose proof (pd_own _ _ _ _ Hp x Hx Hr). lia. }
  split; [|split; [exact Hrep | split; [lia | split; [rewrite Hr1; reflexivity | exact Hown]]]].
  rewrite Hr1.
  constructor; cbn [rep_id rep_state rep_clock rep_outbox rep_sealedUpTo context collections].
  - intro x. unfold ctx_insert_range, ctx_union. rewrite (pd_ctx _ _ _ _ Hp).
    unfold ctx_of_vv, ctx_range, vv_set.
    destruct (Nat.eqb_spec (replica x) (rep_id r)) as [Ex|Ex]; cbn [andb orb].
    + destruct (Nat.ltb_spec 0 u), (Nat.leb_spec (hlc x) u), (Nat.leb_spec (hlc x) (hlc d)),
               (Nat.ltb_spec 0 (hlc d)); cbn; lia || reflexivity.
    + rewrite orb_false_r. reflexivity.
  - pose proof (pd_u _ _ _ _ Hp). lia.
  - apply (pd_untouched _ _ _ _ Hp).
  - intros c i k e He. destruct (pd_entries _ _ _ _ Hp c i k e He) as [H|[H1 [H2 H3]]]; [auto|].
    right. repeat split; auto. lia.
  - apply (pd_ordered _ _ _ _ Hp).
  - apply (pd_noscopes _ _ _ _ Hp).
  - intros x Hx Hr. rewrite Hl. unfold ctx_insert_range, ctx_union in Hx.
    apply orb_true_iff in Hx as [Hx|Hx].
    + apply Hown in Hx; [lia | exact Hr].
    + apply ctx_range_spec in Hx. lia.
  - intros x Hx. rewrite Ho. unfold ctx_insert_range, ctx_union in Hx.
    apply orb_true_iff in Hx as [Hx|Hx].
    + apply (pd_clock _ _ _ _ Hp) in Hx. lia.
    + apply ctx_range_spec in Hx. lia.
  - apply (pd_sealed _ _ _ _ Hp).
Qed.

(** Within the lead, the new dot is above every dot the replica had seen, whichever
    replica issued it. *)
Lemma nextDot_after_seen s0 V u r now r1 d :
  Pending s0 V u r -> within_lead r now -> nextDot r now = Some (r1, d) ->
  forall x, context (rep_state r) x = true -> hlc x < hlc d.
Proof.
  intros Hp Hl E x Hx. destruct (nextDot_inv r now r1 d E) as [Ht _].
  pose proof (tick_gt_followed _ _ _ _ _ Ht Hl). pose proof (pd_clock _ _ _ _ Hp x Hx). lia.
Qed.

Lemma in_insert_by_dot e l x : In x (insert_by_dot e l) <-> e = x \/ In x l.
Proof.
  induction l as [|y l IH]; cbn; [tauto|].
  destruct (stamp_ltb (dot e) (dot y)); cbn; [tauto|]. rewrite IH. tauto.
Qed.

Lemma ordered_insert_by_dot e l :
  ordered dot l -> (forall x, In x l -> dot x <> dot e) -> ordered dot (insert_by_dot e l).
Proof.
  induction l as [|y l IH]; intros Ho Hne; cbn; [repeat constructor|].
  pose proof Ho as Ho'. apply ordered_cons in Ho' as [Hl Hy].
  destruct (stamp_ltb (dot e) (dot y)) eqn:E.
  - constructor; [exact Ho|]. apply Forall_forall. intros z [<-|Hz]; [exact E|].
    apply (stamp_lt_trans _ (dot y)); [exact E | apply Hy, Hz].
  - assert (Hye : stamp_lt (dot y) (dot e)).
    { destruct (stamp_trichotomy (dot e) (dot y)) as [H|[H|H]];
        [unfold stamp_lt in H; congruence | | exact H].
      exfalso. apply (Hne y); [left; reflexivity | symmetry; exact H]. }
    constructor.
    + apply IH; [exact Hl|]. intros x Hx. apply Hne. right; exact Hx.
    + apply Forall_forall. intros z Hz. apply in_insert_by_dot in Hz as [->|Hz]; [exact Hye|].
      apply Hy, Hz.
Qed.

(** The writer's liveness dot replaces its own, among the others' in dot order: the slot
    stays sorted whatever the clock issued. *)
Lemma pending_touchLiveness s0 V h r ref d :
  Pending s0 V h r -> replica d = rep_id r -> V (rep_id r) < hlc d -> hlc d <= h ->
  Pending s0 V h (touchLiveness r ref d).
Proof.
  intros Hp H1 H2 H3. unfold touchLiveness, replace. apply pending_replace_where; [assumption|].
  intros c i k HP. apply at_slot_true in HP as [-> [-> ->]].
  change (slots (record (rep_state r) ref) Liveness)
    with (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness) in *.
  split.
  - apply ordered_insert_by_dot.
    + apply ordered_filter, (pd_ordered _ _ _ _ Hp).
    + intros x Hx E. apply filter_In in Hx as [_ Hx]. cbn [dot] in E.
      rewrite E, H1, Nat.eqb_refl in Hx. discriminate.
  - intros e He. apply in_insert_by_dot in He as [<-|He].
    + right; cbn; auto.
    + apply filter_In in He as [He _]. apply (pd_entries _ _ _ _ Hp); assumption.
Qed.

Lemma clear_sub r P c i k e :
  In e (entries (slot_at (rep_state (replace_where r P (fun _ _ _ => []))) c i k)) ->
  In e (entries (slot_at (rep_state r) c i k)).
Proof. rewrite replace_where_slot. destruct (P c i k); cbn; [intros []|auto]. Qed.

(** What every local write guarantees: the replica is pending over its sealed state,
    and the write's dot is its own and above every own dot it had seen (no dot is issued
    twice). *)
Definition op_result (r : Replica) (V : VersionVector) (r' : Replica) (d : Stamp) : Prop :=
  Pending (rep_state r) V (hlc d) r' /\ replica d = rep_id r /\ V (rep_id r) < hlc d /\
  (forall x, context (rep_state r) x = true -> replica x = rep_id r -> hlc x < hlc d) /\
  rep_id r' = rep_id r.

Lemma beginWrite_inv r ref now r' d :
  beginWrite r ref now = Some (r', d) ->
  exists r1, nextDot r now = Some (r1, d) /\
    r' = touchLiveness (if isVisible (record (rep_state r1) ref) then r1 else clearRecord r1 ref true) ref d.
Proof.
  unfold beginWrite. destruct (nextDot r now) as [[r1 d1]|]; [|discriminate].
  intro E. inversion E; subst. eauto.
Qed.

Lemma beginWrite_fails r ref now : beginWrite r ref now = None <-> nextDot r now = None.
Proof.
  unfold beginWrite. destruct (nextDot r now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma pending_beginWrite V r ref now r' d :
  sealed_replica r V -> beginWrite r ref now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. pose proof (sealed_pending r V Hs) as Hp.
  destruct (beginWrite_inv r ref now r' d E) as [r1 [N ->]].
  destruct (pending_nextDot _ V _ r now r1 d Hp N) as [Hp1 [Hrep [Hu [Hid Hown]]]].
  assert (Hrep1 : replica d = rep_id r1) by congruence.
  assert (Hu1 : V (rep_id r1) < hlc d) by (rewrite Hid; exact Hu).
  destruct (isVisible (record (rep_state r1) ref)).
  - split; [|repeat split; auto].
    apply pending_touchLiveness; [exact Hp1 | exact Hrep1 | exact Hu1 | lia].
  - split; [|repeat split; auto].
    apply pending_touchLiveness; [apply pending_clear; exact Hp1 | exact Hrep1 | exact Hu1 | lia].
Qed.

Lemma clearRegister_id r name ref : rep_id (clearRegister r name ref) = rep_id r.
Proof. unfold clearRegister; destruct stored; reflexivity. Qed.

Lemma pending_applyWrite s0 V h r w name ref d :
  Pending s0 V h r -> replica d = rep_id r -> V (rep_id r) < hlc d -> hlc d <= h ->
  Pending s0 V h (applyWrite r w name ref d) /\ rep_id (applyWrite r w name ref d) = rep_id r.
Proof.
  intros Hp H1 H2 H3. destruct w as [v|f|els]; cbn [applyWrite]; split; try reflexivity.
  - unfold replace. apply pending_own; try assumption. apply pending_clear; assumption.
  - unfold replace. apply pending_own; try assumption. apply pending_clear; assumption.
  - apply pending_own.
    + apply pending_clear. unfold clearRegister; destruct stored; [|assumption].
      apply pending_clear; assumption.
    + cbn [rep_id clearElements replace_where]. rewrite clearRegister_id. assumption.
    + cbn [rep_id clearElements replace_where]. rewrite clearRegister_id. assumption.
    + assumption.
  - cbn [rep_id clearElements replace_where]. apply clearRegister_id.
Qed.

Lemma pending_applyWrites s0 V h fields r ref d :
  Pending s0 V h r -> replica d = rep_id r -> V (rep_id r) < hlc d -> hlc d <= h ->
  Pending s0 V h (applyWrites r fields ref d) /\ rep_id (applyWrites r fields ref d) = rep_id r.
Proof.
  revert r; induction fields as [|[name w] fields IH]; intros r Hp H1 H2 H3; [split; auto|].
  change (applyWrites r ((name, w) :: fields) ref d)
    with (applyWrites (applyWrite r w name ref d) fields ref d).
  destruct (pending_applyWrite s0 V h r w name ref d Hp H1 H2 H3) as [Hp' Hid].
  destruct (IH (applyWrite r w name ref d)) as [Hp'' Hid']; try rewrite Hid; auto.
  split; [assumption | congruence].
Qed.

Lemma put_inv r ref fields now r' d :
  put r ref fields now = Some (r', d) ->
  exists r1, beginWrite r ref now = Some (r1, d) /\ r' = applyWrites r1 fields ref d.
Proof.
  unfold put. destruct (beginWrite r ref now) as [[r1 d1]|]; [|discriminate].
  intro E. inversion E; subst. eauto.
Qed.

Lemma put_result V r ref fields now r' d :
  sealed_replica r V -> put r ref fields now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. destruct (put_inv r ref fields now r' d E) as [r1 [B ->]].
  destruct (pending_beginWrite V r ref now r1 d Hs B) as [Hp [H1 [H2 [H3 H4]]]].
  destruct (pending_applyWrites _ V _ fields _ ref d Hp) as [Hp' Hid];
    try rewrite H4; try assumption; try lia.
  split; [assumption|]. repeat split; auto. congruence.
Qed.

Lemma add_result V r ref field element now r' d :
  sealed_replica r V -> add r ref field element now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. unfold add in E. destruct (beginWrite r ref now) as [[r1 d1]|] eqn:B; [|discriminate].
  inversion E; subst; clear E.
  destruct (pending_beginWrite V r ref now r1 d Hs B) as [Hp [H1 [H2 [H3 H4]]]].
  split; [|repeat split; auto].
  - unfold replace. apply pending_own; try (unfold clearRegister; destruct stored; cbn [rep_id replace replace_where]; rewrite H4; assumption); try lia.
    unfold clearRegister; destruct stored; [apply pending_clear|]; assumption.
  - unfold clearRegister; destruct stored; exact H4.
Qed.

Lemma remove_result V r ref field element now r' d :
  sealed_replica r V -> remove r ref field element now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. unfold remove in E. destruct (beginWrite r ref now) as [[r1 d1]|] eqn:B; [|discriminate].
  inversion E; subst; clear E.
  destruct (pending_beginWrite V r ref now r1 d Hs B) as [Hp [H1 [H2 [H3 H4]]]].
  split; [|repeat split; auto].
  unfold replace. apply pending_clear. assumption.
Qed.

Lemma keepRecord_result V r ref now r' d :
  sealed_replica r V -> keepRecord r ref now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. unfold keepRecord in E. destruct (beginWrite r ref now) as [[r1 d1]|] eqn:B; [|discriminate].
  inversion E; subst; clear E.
  destruct (pending_beginWrite V r ref now r1 d Hs B) as [Hp [H1 [H2 [H3 H4]]]].
  split; [|repeat split; auto].
  unfold replace. apply pending_clear. assumption.
Qed.

Lemma delete_result V r ref now r' d :
  sealed_replica r V -> delete r ref now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. pose proof (sealed_pending r V Hs) as Hp.
  unfold delete in E. destruct (nextDot r now) as [[r1 d1]|] eqn:N; [|discriminate].
  inversion E; subst; clear E.
  destruct (pending_nextDot _ V _ r now r1 d Hp N) as [Hp1 [Hrep [Hu [Hid Hown]]]].
  assert (Hrep1 : replica d = rep_id r1) by congruence.
  assert (Hu1 : V (rep_id r1) < hlc d) by (rewrite Hid; exact Hu).
  split; [|repeat split; auto].
  unfold replace. apply pending_own; [apply pending_clear; exact Hp1 | exact Hrep1 | exact Hu1 | lia].
Qed.

Lemma create_result V r ref fields now r' d :
  sealed_replica r V -> create r ref fields now = Some (r', d) -> op_result r V r' d.
Proof.
  intros Hs E. pose proof (sealed_pending r V Hs) as Hp.
  unfold create in E. destruct (nextDot r now) as [[r1 d1]|] eqn:N; [|discriminate].
  inversion E; subst; clear E.
  destruct (pending_nextDot _ V _ r now r1 d Hp N) as [Hp1 [Hrep [Hu [Hid Hown]]]].
  rewrite <- Hid in Hrep, Hu.
  assert (Hp2 : Pending (rep_state r) V (hlc d) (touchLiveness (clearRecord r1 ref false) ref d)).
  { apply pending_touchLiveness; try assumption; try lia. apply pending_clear; assumption. }
  destruct (pending_applyWrites _ V _ fields _ ref d Hp2) as [Hp' Hid']; try assumption; try lia.
  split; [assumption|]. split; [congruence|]. split; [rewrite <- Hid; exact Hu|].
  split; [exact Hown|]. transitivity (rep_id r1); [exact Hid' | exact Hid].
Qed.

(** Within the lead, a [put] (so [set], [setFile]) takes a stamp above everything its
    replica had seen. *)
Lemma put_after_seen V r ref fields now r' d :
  sealed_replica r V -> within_lead r now -> put r ref fields now = Some (r', d) ->
  forall x, context (rep_state r) x = true -> hlc x < hlc d.
Proof.
  intros Hs Hl E. destruct (put_inv r ref fields now r' d E) as [r1 [B _]].
  destruct (beginWrite_inv r ref now r1 d B) as [r2 [N _]].
  apply (nextDot_after_seen _ V _ r now r2 d (sealed_pending r V Hs) Hl N).
Qed.

(** Every mutation throws ([clockExhausted]) exactly when [nextDot] does: when the clock
    has issued [UInt64.max].  A sealed replica ([sr_room]) is never there. *)
Lemma put_fails r ref fields now : put r ref fields now = None <-> nextDot r now = None.
Proof.
  rewrite <- (beginWrite_fails r ref now). unfold put.
  destruct (beginWrite r ref now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma add_fails r ref field element now : add r ref field element now = None <-> nextDot r now = None.
Proof.
  rewrite <- (beginWrite_fails r ref now). unfold add.
  destruct (beginWrite r ref now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma remove_fails r ref field element now : remove r ref field element now = None <-> nextDot r now = None.
Proof.
  rewrite <- (beginWrite_fails r ref now). unfold remove.
  destruct (beginWrite r ref now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma keepRecord_fails r ref now : keepRecord r ref now = None <-> nextDot r now = None.
Proof.
  rewrite <- (beginWrite_fails r ref now). unfold keepRecord.
  destruct (beginWrite r ref now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma create_fails r ref fields now : create r ref fields now = None <-> nextDot r now = None.
Proof.
  unfold create. destruct (nextDot r now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma delete_fails r ref now : delete r ref now = None <-> nextDot r now = None.
Proof.
  unfold delete. destruct (nextDot r now) as [[r1 d1]|]; split; intro H; solve [discriminate | reflexivity].
Qed.

Lemma sealed_nextDot r V now : sealed_replica r V -> exists r1 d, nextDot r now = Some (r1, d).
Proof.
  intro Hs. destruct (nextDot r now) as [[r1 d]|] eqn:E; [eauto|].
  apply nextDot_fails in E. pose proof (sr_room _ _ Hs). lia.
Qed.

(** ** Sealing: a replica's state is its sealed state joined with the delta it seals *)

Definition sealed_delta (r : Replica) (V : VersionVector) (u seq : nat) : Delta :=
  makeDelta r (vv_set V (rep_id r) u) u seq.

Section Seal.
  Variables (s0 : StoreState) (V : VersionVector) (u seq : nat) (r : Replica).
  Hypothesis Hb : sealed_base s0 V.
  Hypothesis Hp : Pending s0 V u r.
  Hypothesis Hu : V (rep_id r) < u.

  Let delta := sealed_delta r V u seq.

  Lemma seal_observed x : observed delta x = vv_set V (rep_id r) u x.
  Proof.
    unfold delta, observed, sealed_delta, makeDelta, vv_set; cbn.
    destruct (Nat.eqb_spec x (rep_id r)); reflexivity.
  Qed.

  Lemma seal_own x :
    ownContext delta x = true <->
    replica x = rep_id r /\ (if Nat.eqb (V (rep_id r)) 0 then 0 else S (V (rep_id r))) <= hlc x /\ hlc x <= u.
  Proof.
    rewrite ownContext_spec. unfold delta, ownRange_lo, sealed_delta, makeDelta; cbn [origin dependencies upTo].
    rewrite vv_set_same, (pd_sealed _ _ _ _ Hp). tauto.
  Qed.

  (** The context of the sealed state and the own range make up the replica's context. *)
  Lemma seal_ctx x : ctx_of_vv V x || ownContext delta x = ctx_of_vv (vv_set V (rep_id r) u) x.
  Proof.
    destruct (ownContext delta x) eqn:Eo.
    - apply seal_own in Eo as [E1 [E2 E3]]. rewrite orb_true_r. symmetry.
      apply ctx_of_vv_spec. rewrite E1, vv_set_same. lia.
    - rewrite orb_false_r. unfold ctx_of_vv, vv_set.
      destruct (Nat.eqb_spec (replica x) (rep_id r)) as [E|E]; [|reflexivity].
      rewrite E. destruct (Nat.ltb_spec 0 (V (rep_id r))), (Nat.leb_spec (hlc x) (V (rep_id r)));
        cbn [andb]; symmetry.
      + apply andb_true_iff. rewrite Nat.ltb_lt, Nat.leb_le. lia.
      + apply andb_false_iff. right. apply Nat.leb_gt.
        destruct (Nat.leb_spec (hlc x) u); [|lia]. exfalso.
        assert (ownContext delta x = true); [|congruence].
        apply seal_own. split; [assumption|]. split; [|assumption].
        destruct (Nat.eqb_spec (V (rep_id r)) 0); lia.
      + apply andb_false_iff. right. apply Nat.leb_gt.
        destruct (Nat.leb_spec (hlc x) u); [|lia]. exfalso.
        assert (ownContext delta x = true); [|congruence].
        apply seal_own. split; [assumption|]. split; [|assumption].
        destruct (Nat.eqb_spec (V (rep_id r)) 0); [lia|lia].
      + apply andb_false_iff. right. apply Nat.leb_gt.
        destruct (Nat.leb_spec (hlc x) u); [|lia]. exfalso.
        assert (ownContext delta x = true); [|congruence].
        apply seal_own. split; [assumption|]. split; [|assumption].
        destruct (Nat.eqb_spec (V (rep_id r)) 0); lia.
  Qed.

  (** Entries of the sealed state lie in its context and outside the own range. *)
  Lemma seal_s0_entry c i k e :
    In e (entries (slot_at s0 c i k)) ->
    ctx_of_vv V (dot e) = true /\ ownContext delta (dot e) = false /\ context s0 (dot e) = true.
  Proof.
    intro He. destruct (sb_wf _ _ Hb c i k) as [_ [Hs _]]. specialize (Hs e He).
    unfold seenBy in Hs. change (slots (collections s0 c i) k) with (slot_at s0 c i k) in Hs.
    rewrite (sb_noscopes _ _ Hb c i k (dot e)), orb_false_r in Hs.
    pose proof Hs as Hs'. rewrite (sb_ctx _ _ Hb) in Hs. split; [assumption|]. split; [|assumption].
    apply ctx_of_vv_spec in Hs as [H1 H2].
    destruct (ownContext delta (dot e)) eqn:Eo; [|reflexivity].
    apply seal_own in Eo as [E1 [E2 E3]]. rewrite E1 in *.
    destruct (Nat.eqb_spec (V (rep_id r)) 0); lia.
  Qed.

  (** Entries the replica wrote since the seal are new to the sealed state. *)
  Lemma seal_new_entry e :
    replica (dot e) = rep_id r -> V (rep_id r) < hlc (dot e) -> context s0 (dot e) = false.
  Proof.
    intros H1 H2. rewrite (sb_ctx _ _ Hb). unfold ctx_of_vv. rewrite H1.
    destruct (Nat.leb_spec (hlc (dot e)) (V (rep_id r))); [lia|]. apply andb_false_r.
  Qed.

  Theorem seal_is_join : state_eq (rep_state r) (joined s0 (delta_state delta)).
  Proof.
    split.
    - intro x. cbn [joined context]. rewrite delta_state_context. unfold ctx_union.
      rewrite (sb_ctx _ _ Hb x), seal_ctx. apply (pd_ctx _ _ _ _ Hp).
    - intros c i k. change (slot_eq (slot_at (rep_state r) c i k) (slot_at (joined s0 (delta_state delta)) c i k)).
      rewrite slot_at_joined, delta_state_context, delta_state_slot.
      assert (Hrec : carried delta c i k =
                     if rep_outbox r c i k then Some (entries (slot_at (rep_state r) c i k)) else None)
        by (unfold carried; cbn; destruct (rep_outbox r c i k); reflexivity).
      rewrite Hrec. destruct (rep_outbox r c i k) eqn:Eout.
      + split; cbn [entries scope joinSlots].
        * symmetry. apply (ordered_lookup_ext dot).
          { apply dotstore_join_ordered; [apply (sb_wf _ _ Hb c i k) | apply (pd_ordered _ _ _ _ Hp)]. }
          { apply (pd_ordered _ _ _ _ Hp). }
          intro x. rewrite lookup_dotstore_join by (apply (sb_wf _ _ Hb c i k) || apply (pd_ordered _ _ _ _ Hp)).
          destruct (lookup dot (entries (slot_at s0 c i k)) x) as [e0|] eqn:L0;
          destruct (lookup dot (entries (slot_at (rep_state r) c i k)) x) as [e1|] eqn:L1;
            cbn [join_at].
          -- apply lookup_some in L0 as [D0 I0]. apply lookup_some in L1 as [D1 I1].
             destruct (pd_entries _ _ _ _ Hp c i k e1 I1) as [I1'|[N1 [N2 _]]].
             ++ f_equal. apply (lookup_ordered_in dot) in I0; [|apply (sb_wf _ _ Hb c i k)].
                apply (lookup_ordered_in dot) in I1'; [|apply (sb_wf _ _ Hb c i k)]. congruence.
             ++ exfalso. pose proof (seal_new_entry e1 N1 N2) as F.
                destruct (seal_s0_entry c i k e0 I0) as [_ [_ T]]. congruence.
          -- apply lookup_some in L0 as [D0 I0]. subst x.
             destruct (seal_s0_entry c i k e0 I0) as [Hv [Ho _]].
             unfold seenBy, ctx_subtracting; cbn [scope]. rewrite Ho. cbn [orb negb].
             replace (ctx_of_vv (observed delta) (dot e0)) with true; [reflexivity|].
             symmetry. unfold ctx_of_vv. rewrite seal_observed. fold (ctx_of_vv (vv_set V (rep_id r) u) (dot e0)).
             rewrite <- seal_ctx, Hv. reflexivity.
          -- apply lookup_some in L1 as [D1 I1]. subst x.
             destruct (pd_entries _ _ _ _ Hp c i k e1 I1) as [I1'|[N1 [N2 _]]].
             ++ exfalso. apply (lookup_ordered_in dot) in I1'; [congruence|apply (sb_wf _ _ Hb c i k)].
             ++ unfold seenBy. rewrite (seal_new_entry e1 N1 N2), (sb_noscopes _ _ Hb c i k (dot e1)).
                reflexivity.
          -- reflexivity.
        * intro x. rewrite (pd_noscopes _ _ _ _ Hp c i k x).
          unfold ctx_subtracting, ctx_union. rewrite (sb_noscopes _ _ Hb c i k x). unfold ctx_empty.
          cbn [orb]. unfold ctx_of_vv at 1. rewrite seal_observed.
          fold (ctx_of_vv (vv_set V (rep_id r) u) x). rewrite <- seal_ctx, <- (sb_ctx _ _ Hb x).
          destruct (context s0 x), (ownContext delta x); reflexivity.
      + rewrite (pd_untouched _ _ _ _ Hp c i k Eout).
        split; cbn [entries scope joinSlots emptySlot].
        * rewrite dotstore_join_merge, merge_nil_r. symmetry. apply filter_all.
          intros e He. destruct (seal_s0_entry c i k e He) as [_ [Ho _]].
          unfold seenBy; cbn [scope ctx_empty]. rewrite Ho. reflexivity.
        * intro x. unfold ctx_subtracting, ctx_union. rewrite (sb_noscopes _ _ Hb c i k x).
          reflexivity.
  Qed.

  Lemma sealed_delta_valid : delta_valid delta.
  Proof.
    constructor.
    - unfold delta, sealed_delta, makeDelta; cbn. rewrite vv_set_same, (pd_sealed _ _ _ _ Hp). assumption.
    - intros c i k es E. unfold delta, sealed_delta, carried, makeDelta in E; cbn in E.
      destruct (rep_outbox r c i k); inversion E; subst. apply (pd_ordered _ _ _ _ Hp).
    - intros c i k es e E He. unfold delta, sealed_delta, carried, makeDelta in E; cbn in E.
      destruct (rep_outbox r c i k); inversion E; subst. rewrite seal_observed.
      destruct (pd_entries _ _ _ _ Hp c i k e He) as [I|[N1 [N2 N3]]].
      + destruct (seal_s0_entry c i k e I) as [Hv _]. apply ctx_of_vv_spec in Hv as [_ Hv].
        unfold vv_set. destruct (Nat.eqb_spec (replica (dot e)) (rep_id r)) as [Er|]; [|assumption].
        rewrite Er in Hv. lia.
      + rewrite N1, vv_set_same. assumption.
    - intros c i k es e E He. unfold delta, sealed_delta, carried, makeDelta in E; cbn in E.
      destruct (rep_outbox r c i k); inversion E; subst.
      destruct (pd_entries _ _ _ _ Hp c i k e He) as [I|[N1 [N2 N3]]].
      + apply (sb_pos _ _ Hb c i k e I).
      + lia.
  Qed.
End Seal.

(** ** What particular writes leave in particular slots *)

Definition field_key (k : SlotKey) : bool :=
  match k with Field _ | Element _ _ => true | _ => false end.

Lemma applyWrite_nonfield r w name ref d c i k :
  field_key k = false ->
  slot_at (rep_state (applyWrite r w name ref d)) c i k = slot_at (rep_state r) c i k /\
  rep_outbox (applyWrite r w name ref d) c i k = rep_outbox r c i k.
Proof.
  intro Hk.
  assert (Hat : forall n, slotkey_eqb (Field n) k = false)
    by (intro n; destruct k; try discriminate; reflexivity).
  assert (Hel : forall n, is_element_of n k = false) by (intro n; destruct k; try discriminate; reflexivity).
  assert (Hin : forall n l, element_in n l k = false) by (intros n l; destruct k; try discriminate; reflexivity).
  assert (HcR : slot_at (rep_state (clearRegister r name ref)) c i k = slot_at (rep_state r) c i k /\
                rep_outbox (clearRegister r name ref) c i k = rep_outbox r c i k).
  { unfold clearRegister. destruct stored; [|split; reflexivity].
    unfold replace. rewrite replace_where_slot. cbn [rep_outbox replace_where].
    unfold at_slot. rewrite Hat, andb_false_r, orb_false_r. split; reflexivity. }
  destruct w as [v|f|els]; cbn [applyWrite]; unfold replace, clearElements;
    rewrite !replace_where_slot; cbn [rep_outbox replace_where rep_state];
    unfold at_slot; rewrite ?Hat, ?Hel, ?Hin, ?andb_false_r, ?orb_false_r.
  - split; reflexivity.
  - split; reflexivity.
  - destruct HcR as [H1 H2]. cbn [andb]. split; assumption.
Qed.

Lemma applyWrites_nonfield fields r ref d c i k :
  field_key k = false ->
  slot_at (rep_state (applyWrites r fields ref d)) c i k = slot_at (rep_state r) c i k /\
  rep_outbox (applyWrites r fields ref d) c i k = rep_outbox r c i k.
Proof.
  intro Hk. revert r; induction fields as [|[name w] fields IH]; intro r; [split; reflexivity|].
  change (applyWrites r ((name, w) :: fields) ref d)
    with (applyWrites (applyWrite r w name ref d) fields ref d).
  destruct (IH (applyWrite r w name ref d)) as [H1 H2].
  destruct (applyWrite_nonfield r w name ref d c i k Hk) as [H3 H4]. split; congruence.
Qed.

(** [put]: the writer's liveness dot is in the record's liveness slot. *)
Lemma put_liveness r ref fields now r' d :
  put r ref fields now = Some (r', d) ->
  In (mkEntry d Marker) (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) Liveness)).
Proof.
  intro E. destruct (put_inv r ref fields now r' d E) as [r1 [B ->]].
  destruct (beginWrite_inv r ref now r1 d B) as [r2 [_ ->]].
  rewrite (proj1 (applyWrites_nonfield _ _ _ _ _ _ Liveness eq_refl)).
  unfold touchLiveness, replace. rewrite replace_where_slot, at_slot_refl.
  cbn [entries]. apply in_insert_by_dot. left; reflexivity.
Qed.

(** [set]/[setFile]: the field's slot holds the new value alone, and is in the outbox. *)
Lemma set_field r ref name v now r' d :
  set r ref name v now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Field name)) = [mkEntry d (PScalar v)] /\
  rep_outbox r' (ref_collection ref) (ref_id ref) (Field name) = true.
Proof.
  unfold set. intro E. destruct (put_inv _ _ _ _ r' d E) as [r1 [_ ->]].
  unfold applyWrites; cbn [fold_left applyWrite fst snd].
  unfold replace; rewrite replace_where_slot, at_slot_refl; cbn [rep_outbox replace_where].
  rewrite at_slot_refl, orb_true_r; split; reflexivity.
Qed.

Lemma setFile_field r ref name f now r' d :
  setFile r ref name f now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Field name)) = [mkEntry d (PFile f)] /\
  rep_outbox r' (ref_collection ref) (ref_id ref) (Field name) = true.
Proof.
  unfold setFile. intro E. destruct (put_inv _ _ _ _ r' d E) as [r1 [_ ->]].
  unfold applyWrites; cbn [fold_left applyWrite fst snd].
  unfold replace; rewrite replace_where_slot, at_slot_refl; cbn [rep_outbox replace_where].
  rewrite at_slot_refl, orb_true_r; split; reflexivity.
Qed.

(** [add]: the element's slot holds the new add alone. *)
Lemma add_element r ref name x now r' d :
  add r ref name x now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Element name x)) = [mkEntry d Marker].
Proof.
  unfold add. destruct (beginWrite r ref now) as [[r1 d1]|]; [|discriminate].
  intro E; inversion E; subst; clear E.
  unfold replace. rewrite replace_where_slot, at_slot_refl. reflexivity.
Qed.

(** [remove]: the element's slot is emptied, and in the outbox. *)
Lemma remove_element r ref name x now r' d :
  remove r ref name x now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Element name x)) = [] /\
  rep_outbox r' (ref_collection ref) (ref_id ref) (Element name x) = true.
Proof.
  unfold remove. destruct (beginWrite r ref now) as [[r1 d1]|]; [|discriminate].
  intro E; inversion E; subst; clear E.
  unfold replace. rewrite replace_where_slot, at_slot_refl.
  cbn [rep_outbox replace_where]. rewrite at_slot_refl, orb_true_r. split; reflexivity.
Qed.

(** [delete]: the tombstone slot holds the delete's dot; only the record's liveness and
    tombstone slots enter the outbox. *)
Lemma delete_tombstone r ref now r' d :
  delete r ref now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) Tombstones) = [mkEntry d Marker].
Proof.
  unfold delete. destruct (nextDot r now) as [[r1 d1]|]; [|discriminate].
  intro E; inversion E; subst; clear E.
  unfold replace. rewrite replace_where_slot, at_slot_refl. reflexivity.
Qed.

Lemma delete_outbox r ref now r' d c i k :
  delete r ref now = Some (r', d) ->
  rep_outbox r' c i k =
  rep_outbox r c i k || at_slot ref Liveness c i k || at_slot ref Tombstones c i k.
Proof.
  unfold delete. destruct (nextDot r now) as [[r1 d1]|] eqn:N; [|discriminate].
  intro E; inversion E; subst; clear E.
  cbn [replace replace_where rep_outbox]. rewrite (nextDot_outbox _ _ _ _ N). reflexivity.
Qed.

(** ** Re-creation: every slot of the record is cleared or was already empty *)

Definition only_dot (ref : RecordRef) (d : Stamp) (r : Replica) : Prop :=
  forall k e, In e (entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) k)) -> dot e = d.

Definition cleared (ref : RecordRef) (s0 : StoreState) (r : Replica) : Prop :=
  forall k, rep_outbox r (ref_collection ref) (ref_id ref) k = true \/
            entries (slot_at s0 (ref_collection ref) (ref_id ref) k) = [].

Lemma only_dot_replace_where ref d r P f :
  only_dot ref d r ->
  (forall k e, P (ref_collection ref) (ref_id ref) k = true -> In e (f (ref_collection ref) (ref_id ref) k) ->
               dot e = d) ->
  only_dot ref d (replace_where r P f).
Proof.
  intros H Hf k e. rewrite replace_where_slot. destruct (P _ _ k) eqn:E; [apply Hf; assumption | apply H].
Qed.

Lemma cleared_replace_where ref s0 r P f : cleared ref s0 r -> cleared ref s0 (replace_where r P f).
Proof.
  intros H k. destruct (H k) as [H'|H']; [left|right; assumption]. cbn [rep_outbox replace_where].
  rewrite H'. reflexivity.
Qed.

Lemma only_dot_applyWrites ref d fields r s0 :
  only_dot ref d r -> cleared ref s0 r ->
  only_dot ref d (applyWrites r fields ref d) /\ cleared ref s0 (applyWrites r fields ref d).
Proof.
  revert r; induction fields as [|[name w] fields IH]; intros r Ho Hc; [auto|].
  change (applyWrites r ((name, w) :: fields) ref d)
    with (applyWrites (applyWrite r w name ref d) fields ref d).
  assert (Hstep : only_dot ref d (applyWrite r w name ref d) /\ cleared ref s0 (applyWrite r w name ref d)).
  { destruct w as [v|f|els]; cbn [applyWrite]; unfold replace, clearElements.
    - split; repeat apply cleared_replace_where; auto.
      apply only_dot_replace_where; [apply only_dot_replace_where; [assumption|intros; contradiction]|].
      intros k e _ [<-|[]]; reflexivity.
    - split; repeat apply cleared_replace_where; auto.
      apply only_dot_replace_where; [apply only_dot_replace_where; [assumption|intros; contradiction]|].
      intros k e _ [<-|[]]; reflexivity.
    - unfold clearRegister. destruct stored; unfold replace;
        (split; [|repeat apply cleared_replace_where; assumption]);
        (apply only_dot_replace_where; [|intros k e _ [<-|[]]; reflexivity]);
        repeat (apply only_dot_replace_where; [|intros; contradiction]); assumption. }
  destruct Hstep as [H1 H2]. apply (IH _ H1 H2).
Qed.

Lemma touchLiveness_only_dot ref d r :
  entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness) = [] ->
  (forall k, k <> Liveness -> entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) k) = []) ->
  only_dot ref d (touchLiveness r ref d).
Proof.
  intros HL Hk k e. unfold touchLiveness, replace. rewrite replace_where_slot.
  destruct (at_slot ref Liveness (ref_collection ref) (ref_id ref) k) eqn:E.
  - apply at_slot_true in E as [_ [_ ->]]. cbn [entries]. unfold record.
    change (slots (collections (rep_state r) (ref_collection ref) (ref_id ref)) Liveness)
      with (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness). rewrite HL.
    intros [<-|[]]; reflexivity.
  - assert (k <> Liveness).
    { intro; subst. rewrite at_slot_refl in E. discriminate. }
    rewrite Hk by assumption. intros [].
Qed.

(** After [clearRecord] every slot of the record but (maybe) the liveness one is empty,
    and each was in the outbox or already empty. *)
Lemma clearRecord_cleared r ref keep k :
  (keep && slotkey_eqb k Liveness) = false ->
  entries (slot_at (rep_state (clearRecord r ref keep)) (ref_collection ref) (ref_id ref) k) = [] /\
  (rep_outbox (clearRecord r ref keep) (ref_collection ref) (ref_id ref) k = true \/
   entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) k) = []).
Proof.
  intro Hk. unfold clearRecord. rewrite replace_where_slot. cbn [rep_outbox replace_where].
  rewrite is_ref_refl, Hk. cbn [andb negb]. unfold stored.
  destruct (entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) k)) eqn:E; cbn.
  - rewrite E. auto.
  - rewrite orb_true_r. auto.
Qed.

Lemma touchLiveness_outbox r ref d c i k :
  rep_outbox r c i k = true -> rep_outbox (touchLiveness r ref d) c i k = true.
Proof. intro H. cbn [touchLiveness replace replace_where rep_outbox]. rewrite H. reflexivity. Qed.

Lemma touchLiveness_outbox_liveness r ref d :
  rep_outbox (touchLiveness r ref d) (ref_collection ref) (ref_id ref) Liveness = true.
Proof. cbn [touchLiveness replace replace_where rep_outbox]. rewrite at_slot_refl, orb_true_r. reflexivity. Qed.

(** Rule 5, local half: re-creating a record ([put] on a record that is not visible, or
    [create]) leaves in every slot of the record only the new write's entries, and every
    slot that held anything is in the outbox. *)
Lemma recreate_local r ref (r1 : Replica) d :
  collections (rep_state r1) = collections (rep_state r) ->
  (forall c i k, rep_outbox r1 c i k = rep_outbox r c i k) ->
  forall keep, (keep = true -> entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness) = []) ->
  only_dot ref d (touchLiveness (clearRecord r1 ref keep) ref d) /\
  cleared ref (rep_state r) (touchLiveness (clearRecord r1 ref keep) ref d).
Proof.
  intros Hcol Hout keep Hkeep.
  assert (Hslot : forall k, slot_at (rep_state r1) (ref_collection ref) (ref_id ref) k =
                            slot_at (rep_state r) (ref_collection ref) (ref_id ref) k)
    by (intro k; unfold slot_at; rewrite Hcol; reflexivity).
  split.
  - apply touchLiveness_only_dot.
    + destruct keep.
      * unfold clearRecord. rewrite replace_where_slot.
        destruct (_ && _ && _); [reflexivity|]. rewrite Hslot. apply Hkeep. reflexivity.
      * apply (clearRecord_cleared r1 ref false Liveness eq_refl).
    + intros k Hk. apply (clearRecord_cleared r1 ref keep k).
      destruct keep; [|reflexivity]. cbn. destruct (slotkey_eqb_spec k Liveness); [contradiction|reflexivity].
  - intro k. destruct (slotkey_eqb_spec k Liveness) as [->|Hk].
    + left. apply touchLiveness_outbox_liveness.
    + destruct (clearRecord_cleared r1 ref keep k) as [_ [H|H]].
      * destruct keep; [|reflexivity]. cbn. destruct (slotkey_eqb_spec k Liveness); [contradiction|reflexivity].
      * left. apply touchLiveness_outbox. assumption.
      * right. rewrite <- Hslot. assumption.
Qed.

Lemma put_recreates r V ref fields now r' d :
  sealed_replica r V -> isVisible (record (rep_state r) ref) = false ->
  put r ref fields now = Some (r', d) ->
  only_dot ref d r' /\ cleared ref (rep_state r) r'.
Proof.
  intros Hs Hinv E. destruct (put_inv r ref fields now r' d E) as [r1 [B ->]].
  destruct (beginWrite_inv r ref now r1 d B) as [r2 [N ->]].
  assert (Hvis : isVisible (record (rep_state r2) ref) = false)
    by (unfold record; rewrite (nextDot_collections _ _ _ _ N); exact Hinv).
  rewrite Hvis.
  destruct (recreate_local r ref r2 d (nextDot_collections _ _ _ _ N)
              (fun c i k => f_equal (fun o => o c i k) (nextDot_outbox _ _ _ _ N)) true)
    as [H1 H2].
  { intros _. unfold isVisible, record in Hinv.
    destruct (entries (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness)) eqn:E';
      [reflexivity|]. change (slots (collections (rep_state r) (ref_collection ref) (ref_id ref)) Liveness)
        with (slot_at (rep_state r) (ref_collection ref) (ref_id ref) Liveness) in Hinv.
    rewrite E' in Hinv. discriminate. }
  apply only_dot_applyWrites; assumption.
Qed.

Lemma create_recreates r V ref fields now r' d :
  sealed_replica r V -> create r ref fields now = Some (r', d) ->
  only_dot ref d r' /\ cleared ref (rep_state r) r'.
Proof.
  intros Hs. unfold create. destruct (nextDot r now) as [[r1 d1]|] eqn:N; [|discriminate].
  intro E; inversion E; subst; clear E.
  destruct (recreate_local r ref r1 d (nextDot_collections _ _ _ _ N)
              (fun c i k => f_equal (fun o => o c i k) (nextDot_outbox _ _ _ _ N)) false)
    as [H1 H2]; [discriminate|].
  apply only_dot_applyWrites; assumption.
Qed.

(** [keepRecord]: the tombstone slot is emptied, and in the outbox. *)
Lemma keepRecord_tombstones r ref now r' d :
  keepRecord r ref now = Some (r', d) ->
  entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) Tombstones) = [] /\
  rep_outbox r' (ref_collection ref) (ref_id ref) Tombstones = true.
Proof.
  unfold keepRecord. destruct (beginWrite r ref now) as [[r1 d1]|]; [|discriminate].
  intro E; inversion E; subst; clear E.
  unfold replace. rewrite replace_where_slot, at_slot_refl.
  cbn [rep_outbox replace_where]. rewrite at_slot_refl, orb_true_r. split; reflexivity.
Qed.

(** ** A fresh replica ([Replica(id:)]) satisfies the hypotheses of the scenarios *)

(** [init(id:)]: an empty state and [HybridLogicalClock()]. *)
Definition newReplica (id : ReplicaID) : Replica :=
  mkReplica id emptyState (initClock 0 0) (fun _ _ _ => false) 0 0.

Theorem newReplica_sealed id : sealed_replica (newReplica id) vv_empty.
Proof.
  constructor.
  - constructor.
    + intro x. reflexivity.
    + intros c i k x. reflexivity.
    + apply emptyState_wf.
    + intros c i k e [].
  - reflexivity.
  - reflexivity.
  - intros x H. discriminate.
  - intros x H. discriminate.
  - exact uint64Max_pos.
Qed.

(** A fresh replica follows everything it observed (nothing) at any time. *)
Lemma newReplica_within_lead id now : within_lead (newReplica id) now.
Proof. left. reflexivity. Qed.
