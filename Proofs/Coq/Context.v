(** * Context.v — causal contexts and version vectors.

    Mirrors [Sources/ConcordCore/Causality/CausalContext.swift] and
    [Sources/ConcordCore/Causality/VersionVector.swift].

    Modelling choice.  Swift stores a [CausalContext] as per-replica sorted, disjoint,
    non-adjacent ranges of hlc values.  Normalisation makes that representation
    canonical: two contexts are [==] exactly when they hold the same dots.  We model a
    context by the set it denotes — its membership test [contains], a decidable
    predicate [Stamp -> bool] — and compare contexts pointwise ([ctx_eq]), which is
    therefore exactly Swift's equality.  No functional extensionality is used. *)

From Coq Require Import Arith Lia Bool List.
From Concord Require Import Stamp.
Import ListNotations.

Definition CausalContext := Stamp -> bool.

(** [func contains(_ stamp: Stamp) -> Bool] *)
Definition contains (c : CausalContext) (d : Stamp) : bool := c d.

(** [init()] *)
Definition ctx_empty : CausalContext := fun _ => false.

(** [func union(_:)] *)
Definition ctx_union (a b : CausalContext) : CausalContext := fun d => a d || b d.

(** [func subtracting(_:)] *)
Definition ctx_subtracting (a b : CausalContext) : CausalContext := fun d => a d && negb (b d).

(** The dots [(h, replica)] with [h] in [lo ... hi]. *)
Definition ctx_range (lo hi : nat) (r : ReplicaID) : CausalContext :=
  fun d => Nat.eqb (replica d) r && Nat.leb lo (hlc d) && Nat.leb (hlc d) hi.

(** [mutating func insert(_ range: ClosedRange<UInt64>, for replica: ReplicaID)] *)
Definition ctx_insert_range (c : CausalContext) (lo hi : nat) (r : ReplicaID) : CausalContext :=
  ctx_union c (ctx_range lo hi r).

(** [mutating func insert(_ stamp: Stamp)] *)
Definition ctx_insert (c : CausalContext) (s : Stamp) : CausalContext :=
  fun d => c d || stamp_eqb d s.

(** A context built by inserting each dot of a list (as [write]/[add]/[remove] build
    their delta contexts). *)
Definition ctx_of_dots (l : list Stamp) : CausalContext :=
  fun d => existsb (fun x => stamp_eqb x d) l.

(** Equality of contexts: same dots. *)
Definition ctx_eq (a b : CausalContext) : Prop := forall d, a d = b d.

(** [func isSubset(of:)] *)
Definition ctx_subset (a b : CausalContext) : Prop := forall d, a d = true -> b d = true.

(** ** Version vectors *)

(** [struct VersionVector]: [replica -> highest hlc seen], zero when absent. *)
Definition VersionVector := ReplicaID -> nat.

Definition vv_empty : VersionVector := fun _ => 0.

(** [subscript(replica:) { set }] *)
Definition vv_set (v : VersionVector) (r : ReplicaID) (h : nat) : VersionVector :=
  fun r' => if Nat.eqb r' r then h else v r'.

(** [func merging(_:)] — the pointwise maximum. *)
Definition vv_merging (a b : VersionVector) : VersionVector := fun r => Nat.max (a r) (b r).

(** [func dominates(_:)] *)
Definition vv_dominates (a b : VersionVector) : Prop := forall r, b r <= a r.

(** [CausalContext.init(_ vector: VersionVector)]: the ranges [0 ... vector[r]] of the
    non-zero entries (zero entries are not stored, so they contribute nothing). *)
Definition ctx_of_vv (v : VersionVector) : CausalContext :=
  fun d => Nat.ltb 0 (v (replica d)) && Nat.leb (hlc d) (v (replica d)).

(** [StoreState.covers(_:_:_:)]: [hlc == 0], or the first range of [replica] starts at 0
    and reaches [hlc].  On normalised ranges that says: every [(h', replica)] with
    [h' <= hlc] is in the context. *)
Definition covers (c : CausalContext) (r : ReplicaID) (h : nat) : Prop :=
  h = 0 \/ forall h', h' <= h -> c (mkStamp h' r) = true.

(** ** Lemmas *)

Lemma ctx_eq_refl a : ctx_eq a a.
Proof. intro; reflexivity. Qed.

Lemma ctx_eq_sym a b : ctx_eq a b -> ctx_eq b a.
Proof. intros H d; rewrite H; reflexivity. Qed.

Lemma ctx_eq_trans a b c : ctx_eq a b -> ctx_eq b c -> ctx_eq a c.
Proof. intros H1 H2 d; rewrite H1, H2; reflexivity. Qed.

Lemma ctx_union_comm a b : ctx_eq (ctx_union a b) (ctx_union b a).
Proof. intro d; unfold ctx_union; apply orb_comm. Qed.

Lemma ctx_union_assoc a b c :
  ctx_eq (ctx_union (ctx_union a b) c) (ctx_union a (ctx_union b c)).
Proof. intro d; unfold ctx_union; rewrite orb_assoc; reflexivity. Qed.

Lemma ctx_union_idem a : ctx_eq (ctx_union a a) a.
Proof. intro d; unfold ctx_union; apply orb_diag. Qed.

Lemma ctx_of_vv_spec v d :
  ctx_of_vv v d = true <-> 0 < v (replica d) /\ hlc d <= v (replica d).
Proof.
  unfold ctx_of_vv. rewrite andb_true_iff, Nat.ltb_lt, Nat.leb_le. tauto.
Qed.

Lemma ctx_range_spec lo hi r d :
  ctx_range lo hi r d = true <-> replica d = r /\ lo <= hlc d /\ hlc d <= hi.
Proof.
  unfold ctx_range. rewrite !andb_true_iff, Nat.eqb_eq, !Nat.leb_le. tauto.
Qed.

Lemma vv_set_same v r h : vv_set v r h r = h.
Proof. unfold vv_set. rewrite Nat.eqb_refl. reflexivity. Qed.

Lemma vv_set_other v r h r' : r' <> r -> vv_set v r h r' = v r'.
Proof. intro H. unfold vv_set. destruct (Nat.eqb_spec r' r); [contradiction|reflexivity]. Qed.

Lemma ctx_of_dots_spec l d : ctx_of_dots l d = true <-> In d l.
Proof.
  unfold ctx_of_dots. rewrite existsb_exists. split.
  - intros [x [Hin He]]. destruct (stamp_eqb_spec x d); [subst; assumption | discriminate].
  - intro H. exists d. split; [assumption | apply stamp_eqb_refl].
Qed.

(** A version vector's context covers each of its entries. *)
Lemma covers_of_vv v r h : h <= v r -> covers (ctx_of_vv v) r h.
Proof.
  intro H. destruct h as [|h]; [left; reflexivity|right].
  intros h' Hh'. apply ctx_of_vv_spec; simpl. lia.
Qed.

Lemma covers_vv_le v r h : covers (ctx_of_vv v) r h -> h <= v r.
Proof.
  intros [H|H]; [lia|]. specialize (H h (le_n _)).
  apply ctx_of_vv_spec in H; simpl in H. lia.
Qed.

Lemma covers_ext c c' r h : ctx_eq c c' -> covers c r h -> covers c' r h.
Proof.
  intros E [H|H]; [left; assumption|right]. intros h' Hh'. rewrite <- E. auto.
Qed.

(** Version vectors merge as a semilattice (pointwise maximum). *)
Lemma vv_merging_comm a b r : vv_merging a b r = vv_merging b a r.
Proof. unfold vv_merging. apply Nat.max_comm. Qed.

Lemma vv_merging_assoc a b c r :
  vv_merging (vv_merging a b) c r = vv_merging a (vv_merging b c) r.
Proof. unfold vv_merging. symmetry. apply Nat.max_assoc. Qed.

Lemma vv_merging_idem a r : vv_merging a a r = a r.
Proof. unfold vv_merging. apply Nat.max_id. Qed.

(** The context of a merged vector is the union of the contexts. *)
Lemma ctx_of_vv_merging a b : ctx_eq (ctx_of_vv (vv_merging a b)) (ctx_union (ctx_of_vv a) (ctx_of_vv b)).
Proof.
  intro d. unfold ctx_union, vv_merging, ctx_of_vv.
  destruct (Nat.max_spec (a (replica d)) (b (replica d))) as [[H E]|[H E]]; rewrite E;
    destruct (Nat.ltb_spec 0 (a (replica d))), (Nat.leb_spec (hlc d) (a (replica d))),
             (Nat.ltb_spec 0 (b (replica d))), (Nat.leb_spec (hlc d) (b (replica d))); cbn; lia || reflexivity.
Qed.

Lemma vv_dominates_merging a b : vv_dominates (vv_merging a b) a /\ vv_dominates (vv_merging a b) b.
Proof. split; intro r; unfold vv_merging; lia. Qed.
