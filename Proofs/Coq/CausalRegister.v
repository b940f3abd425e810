(** * CausalRegister.v — the LWW-register and the multi-value register.

    Mirrors [Sources/ConcordCore/Registers/CausalRegister.swift]: one register type built
    on the dot store; [LWWRegister = CausalRegister<ScalarValue>] reads the version of
    the greatest stamp, [MVRegister = CausalRegister<FileRef>] reads every version and
    reports a fork. *)

From Coq Require Import Arith Lia Bool List.
From Concord Require Import Stamp Context DotStore Values.
Import ListNotations.

Ltac ord_tac := first [assumption | repeat constructor].

Section CausalRegister.
  Context {Value : Type}.

  (** [struct Version: Dotted { dot: Stamp; value: Value }] *)
  Record Version := mkVersion { vdot : Stamp; vvalue : Value }.

  (** [struct CausalRegister { versions: [Version]; context: CausalContext }] *)
  Record CausalRegister := mkRegister { reg_versions : list Version; reg_context : CausalContext }.

  (** [init()] *)
  Definition reg_empty : CausalRegister := mkRegister [] ctx_empty.

  (** [func joined(_ other:)] *)
  Definition reg_joined (self other : CausalRegister) : CausalRegister :=
    mkRegister (dotstore_join vdot (reg_versions self) (reg_context self)
                                   (reg_versions other) (reg_context other))
               (ctx_union (reg_context self) (reg_context other)).

  (** [mutating func write(_ value:, dot:) -> CausalRegister]: the new register and the
      delta it returns. *)
  Definition reg_write (r : CausalRegister) (value : Value) (d : Stamp) : CausalRegister * CausalRegister :=
    let deltaContext := ctx_insert (ctx_of_dots (map vdot (reg_versions r))) d in
    let delta := mkRegister [mkVersion d value] deltaContext in
    (reg_joined r delta, delta).

  (** [mutating func clear() -> CausalRegister] *)
  Definition reg_clear (r : CausalRegister) : CausalRegister * CausalRegister :=
    let delta := mkRegister [] (ctx_of_dots (map vdot (reg_versions r))) in
    (reg_joined r delta, delta).

  (** [var latest: Version?] = [versions.last] *)
  Definition reg_latest (r : CausalRegister) : option Version :=
    match rev (reg_versions r) with [] => None | v :: _ => Some v end.

  (** Equality of registers: same versions, same dots seen. *)
  Definition reg_eq (a b : CausalRegister) : Prop :=
    reg_versions a = reg_versions b /\ ctx_eq (reg_context a) (reg_context b).

  (** [_checkInvariants()]: versions sorted and unique by dot, every dot seen. *)
  Definition reg_wf (r : CausalRegister) : Prop :=
    ordered vdot (reg_versions r) /\ forall v, In v (reg_versions r) -> reg_context r (vdot v) = true.

  (** ** The register is a join-semilattice *)

  Theorem reg_joined_comm a b :
    reg_wf a -> reg_wf b -> agree vdot (reg_versions a) (reg_versions b) ->
    reg_eq (reg_joined a b) (reg_joined b a).
  Proof.
    intros [Ha _] [Hb _] Hab. split; simpl.
    - apply dotstore_join_comm; assumption.
    - apply ctx_union_comm.
  Qed.

  Theorem reg_joined_assoc a b c :
    reg_wf a -> reg_wf b -> reg_wf c ->
    reg_eq (reg_joined (reg_joined a b) c) (reg_joined a (reg_joined b c)).
  Proof.
    intros [Ha _] [Hb _] [Hc _]. split; simpl.
    - apply dotstore_join_assoc; assumption.
    - apply ctx_union_assoc.
  Qed.

  Theorem reg_joined_idem a : reg_wf a -> reg_eq (reg_joined a a) a.
  Proof.
    intros [Ha _]. split; simpl.
    - apply dotstore_join_idem; assumption.
    - apply ctx_union_idem.
  Qed.

  Lemma reg_joined_wf a b : reg_wf a -> reg_wf b -> reg_wf (reg_joined a b).
  Proof.
    intros [Ha Ha'] [Hb Hb']. split; simpl.
    - apply dotstore_join_ordered; assumption.
    - intros v Hv. unfold ctx_union. apply dotstore_join_incl in Hv as [Hv|Hv].
      + rewrite Ha'; auto.
      + rewrite Hb'; auto using orb_true_r.
  Qed.

  Lemma reg_joined_congr a a' b b' :
    reg_eq a a' -> reg_eq b b' -> reg_eq (reg_joined a b) (reg_joined a' b').
  Proof.
    intros [Ha Ha'] [Hb Hb']. split; simpl.
    - rewrite Ha, Hb. apply dotstore_join_ctx_ext; assumption.
    - intro d; unfold ctx_union; rewrite Ha', Hb'; reflexivity.
  Qed.

  (** ** Writes *)

  Lemma reg_write_delta_wf r value d : reg_wf (snd (reg_write r value d)).
  Proof.
    split; simpl.
    - repeat constructor.
    - intros v [<-|[]]; simpl. unfold ctx_insert. rewrite stamp_eqb_refl. apply orb_true_r.
  Qed.

  Lemma lookup_single (v : Version) y :
    lookup vdot [v] y = if stamp_eqb (vdot v) y then Some v else None.
  Proof. reflexivity. Qed.

  (** A write replaces every version its register held by the new one. *)
  Lemma reg_write_versions r value d :
    reg_wf r -> reg_context r d = false ->
    reg_versions (fst (reg_write r value d)) = [mkVersion d value].
  Proof.
    intros [Ho Hin] Hd. simpl.
    apply (ordered_lookup_ext vdot); [apply dotstore_join_ordered; [assumption|repeat constructor]
                              | repeat constructor |].
    intro y. rewrite lookup_dotstore_join by ord_tac.
    rewrite lookup_single; simpl.
    destruct (stamp_eqb_spec d y) as [<-|Hne].
    - destruct (lookup vdot (reg_versions r) d) eqn:E.
      + apply lookup_some in E as [E1 E2]. rewrite <- E1, Hin in Hd by assumption. discriminate.
      + simpl. rewrite Hd. reflexivity.
    - destruct (lookup vdot (reg_versions r) y) eqn:E; [|reflexivity].
      apply lookup_some in E as [E1 E2]. simpl. unfold ctx_insert.
      replace (ctx_of_dots (map vdot (reg_versions r)) y) with true; [reflexivity|].
      symmetry. apply ctx_of_dots_spec. rewrite <- E1. apply in_map. assumption.
  Qed.

  Lemma reg_write_context r value d y :
    reg_wf r ->
    reg_context (fst (reg_write r value d)) y = reg_context r y || stamp_eqb y d.
  Proof.
    intros [_ Hin]. simpl. unfold ctx_union, ctx_insert.
    destruct (reg_context r y) eqn:Hy; [reflexivity|]. simpl.
    destruct (ctx_of_dots (map vdot (reg_versions r)) y) eqn:E; [|reflexivity].
    apply ctx_of_dots_spec, in_map_iff in E as [v [<- Hv]]. rewrite Hin in Hy by assumption.
    discriminate.
  Qed.

  Lemma reg_write_wf r value d :
    reg_wf r -> reg_context r d = false -> reg_wf (fst (reg_write r value d)).
  Proof.
    intros Hr Hd. apply reg_joined_wf; [assumption | apply reg_write_delta_wf].
  Qed.
End CausalRegister.

Arguments Version : clear implicits.
Arguments CausalRegister : clear implicits.

(** [typealias LWWRegister = CausalRegister<ScalarValue>] *)
Definition LWWRegister := CausalRegister ScalarValue.

(** [var value: ScalarValue?] = [latest?.value] *)
Definition lww_value (r : LWWRegister) : option ScalarValue :=
  option_map vvalue (reg_latest r).

(** [typealias MVRegister = CausalRegister<FileRef>] *)
Definition MVRegister := CausalRegister FileRef.

(** [var value: FileRef?] — the version with the greatest stamp. *)
Definition mv_value (r : MVRegister) : option FileRef := option_map vvalue (reg_latest r).

(** [var isForked: Bool]: some version's content differs from the first one's. *)
Definition isForked (r : MVRegister) : bool :=
  match reg_versions r with
  | [] => false
  | first :: _ => existsb (fun v => negb (hash_eqb (hash (vvalue v)) (hash (vvalue first))))
                          (reg_versions r)
  end.

(** ** Rules of docs/ARCHITECTURE.md §2 on the registers *)

Section Rules.
  Context {Value : Type}.

  (** Two replicas write concurrently from the same register [r0]. *)
  Lemma concurrent_writes_versions (r0 : CausalRegister Value) v1 v2 d1 d2 :
    reg_wf r0 -> reg_context r0 d1 = false -> reg_context r0 d2 = false -> stamp_lt d1 d2 ->
    reg_versions (reg_joined (fst (reg_write r0 v1 d1)) (fst (reg_write r0 v2 d2)))
      = [mkVersion d1 v1; mkVersion d2 v2] /\
    reg_versions (reg_joined (fst (reg_write r0 v2 d2)) (fst (reg_write r0 v1 d1)))
      = [mkVersion d1 v1; mkVersion d2 v2].
  Proof.
    intros Hr H1 H2 Hlt.
    assert (Hne : stamp_eqb d1 d2 = false) by (apply stamp_eqb_neq, stamp_lt_neq; assumption).
    assert (Hne' : stamp_eqb d2 d1 = false) by (rewrite stamp_eqb_sym; assumption).
    assert (Hgt : stamp_ltb d2 d1 = false).
    { destruct (stamp_ltb d2 d1) eqn:E; [|reflexivity]. exfalso; exact (stamp_lt_asym _ _ Hlt E). }
    unfold reg_joined at 1 2. cbn [reg_versions].
    rewrite !reg_write_versions by assumption. rewrite !dotstore_join_merge.
    split.
    - rewrite merge_cons. cbn [vdot]. rewrite Hlt.
      rewrite (reg_write_context r0 v2 d2 d1 Hr), H1, Hne. cbn [orb app].
      rewrite merge_nil_l. cbn [filter vdot]. rewrite (reg_write_context r0 v1 d1 d2 Hr), H2, Hne'.
      reflexivity.
    - rewrite merge_cons. cbn [vdot]. rewrite Hgt, Hlt.
      rewrite (reg_write_context r0 v2 d2 d1 Hr), H1, Hne. cbn [orb app].
      rewrite merge_nil_r. cbn [filter vdot]. rewrite (reg_write_context r0 v1 d1 d2 Hr), H2, Hne'.
      reflexivity.
  Qed.

  (** Rule 2, merge half: a write wins over every write its replica had observed —
      whatever the two stamps' clocks say.  [r] is the writer's register, [x] any
      register whose knowledge the writer had ([x]'s context within [r]'s); [d] is the
      write's fresh dot, with no assumption on how it compares to [x]'s versions. *)
  Theorem rule2_register_causally_later_write_wins (r x : CausalRegister Value) value d :
    reg_wf r -> reg_wf x -> ctx_subset (reg_context x) (reg_context r) ->
    reg_context r d = false ->
    reg_versions (reg_joined x (fst (reg_write r value d))) = [mkVersion d value] /\
    reg_versions (reg_joined (fst (reg_write r value d)) x) = [mkVersion d value].
  Proof.
    intros Hr [Hxo Hxin] Hsub Hd.
    pose proof (reg_write_wf r value d Hr Hd) as [Hwo _].
    assert (Hx : forall y z, lookup vdot (reg_versions x) y = Some z -> y <> d /\
                   reg_context (fst (reg_write r value d)) y = true).
    { intros y z E. apply lookup_some in E as [E1 E2]. subst y.
      specialize (Hsub _ (Hxin z E2)). split.
      - intro E; rewrite E in Hsub; congruence.
      - rewrite reg_write_context by assumption. rewrite Hsub; reflexivity. }
    assert (Hxd : reg_context x d = false).
    { destruct (reg_context x d) eqn:E; [|reflexivity]. apply Hsub in E; congruence. }
    assert (Hlx : lookup vdot (reg_versions x) d = None).
    { destruct (lookup vdot (reg_versions x) d) eqn:E; [|reflexivity].
      destruct (Hx _ _ E); contradiction. }
    split; unfold reg_joined; cbn [reg_versions reg_context];
      (apply (ordered_lookup_ext vdot); [apply dotstore_join_ordered; assumption | repeat constructor |]);
      intro y; rewrite lookup_dotstore_join by assumption;
      rewrite reg_write_versions by assumption; rewrite lookup_single; cbn [vdot];
      (destruct (stamp_eqb_spec d y) as [<-|Hne];
       [rewrite Hlx, ?Hxd; reflexivity|]);
      (destruct (lookup vdot (reg_versions x) y) eqn:E; [|reflexivity]);
      destruct (Hx _ _ E) as [_ Hy]; cbn [join_at]; rewrite ?Hy; reflexivity.
  Qed.

  (** Clearing (the observed-remove that re-creation uses, rule 5) forgets exactly the
      versions the clearing replica held: on any replica, joining the clear's delta keeps
      precisely the versions it had not seen. *)
  Theorem reg_clear_removes_exactly_observed (r x : CausalRegister Value) :
    reg_versions (reg_joined x (snd (reg_clear r))) =
    filter (fun v => negb (ctx_of_dots (map vdot (reg_versions r)) (vdot v))) (reg_versions x).
  Proof. cbn. rewrite dotstore_join_merge, merge_nil_r. reflexivity. Qed.

  (** ... and the delta of a write alone already removes, on any replica, every version
      the writer held. *)
  Theorem rule2_register_observed_versions_removed (r x : CausalRegister Value) value d :
    reg_wf r -> reg_wf x -> reg_context r d = false ->
    forall v, In v (reg_versions r) ->
    lookup vdot (reg_versions (reg_joined x (snd (reg_write r value d)))) (vdot v) = None.
  Proof.
    intros [Hro Hrin] [Hxo _] Hd v Hv.
    unfold reg_joined; cbn [reg_versions reg_context snd].
    rewrite lookup_dotstore_join by ord_tac.
    cbn [reg_write snd reg_versions reg_context].
    rewrite lookup_single; cbn [vdot].
    assert (Hne : stamp_eqb d (vdot v) = false).
    { apply stamp_eqb_neq. intro E. rewrite E, Hrin in Hd by assumption. discriminate. }
    rewrite Hne. unfold ctx_insert.
    replace (ctx_of_dots (map vdot (reg_versions r)) (vdot v)) with true
      by (symmetry; apply ctx_of_dots_spec, in_map; assumption).
    destruct (lookup vdot (reg_versions x) (vdot v)); reflexivity.
  Qed.
End Rules.

(** Rule 1: concurrent writes to one scalar field — the greater stamp wins, on every
    replica alike (whichever side joins). *)
Theorem rule1_lww_concurrent_greater_stamp_wins (r0 : LWWRegister) v1 v2 d1 d2 :
  reg_wf r0 -> reg_context r0 d1 = false -> reg_context r0 d2 = false -> stamp_lt d1 d2 ->
  lww_value (reg_joined (fst (reg_write r0 v1 d1)) (fst (reg_write r0 v2 d2))) = Some v2 /\
  lww_value (reg_joined (fst (reg_write r0 v2 d2)) (fst (reg_write r0 v1 d1))) = Some v2.
Proof.
  intros Hr H1 H2 Hlt. destruct (concurrent_writes_versions r0 v1 v2 d1 d2 Hr H1 H2 Hlt) as [E1 E2].
  unfold lww_value, reg_latest. rewrite E1, E2. split; reflexivity.
Qed.

(** Rule 2 for the LWW-register: the causally later write is the value read. *)
Theorem rule2_lww_causally_later_write_wins (r x : LWWRegister) value d :
  reg_wf r -> reg_wf x -> ctx_subset (reg_context x) (reg_context r) -> reg_context r d = false ->
  lww_value (reg_joined x (fst (reg_write r value d))) = Some value /\
  lww_value (reg_joined (fst (reg_write r value d)) x) = Some value.
Proof.
  intros. destruct (rule2_register_causally_later_write_wins r x value d) as [E1 E2]; try assumption.
  unfold lww_value, reg_latest. rewrite E1, E2. split; reflexivity.
Qed.

(** Rule 6: concurrent writes of different content fork, and both versions are kept. *)
Theorem rule6_concurrent_different_content_forks (r0 : MVRegister) f1 f2 d1 d2 :
  reg_wf r0 -> reg_context r0 d1 = false -> reg_context r0 d2 = false -> stamp_lt d1 d2 ->
  hash f1 <> hash f2 ->
  let m := reg_joined (fst (reg_write r0 f1 d1)) (fst (reg_write r0 f2 d2)) in
  reg_versions m = [mkVersion d1 f1; mkVersion d2 f2] /\ isForked m = true /\
  mv_value m = Some f2.
Proof.
  intros Hr H1 H2 Hlt Hh m.
  destruct (concurrent_writes_versions r0 f1 f2 d1 d2 Hr H1 H2 Hlt) as [E _].
  unfold m, isForked, mv_value, reg_latest. rewrite E. cbn.
  unfold hash_eqb. destruct (ContentHash_eq_dec (hash f1) (hash f1)); [|contradiction].
  destruct (ContentHash_eq_dec (hash f2) (hash f1)) as [E'|]; [symmetry in E'; contradiction|].
  auto.
Qed.

(** Rule 6: concurrent writes of the same content are no fork. *)
Theorem rule6_concurrent_same_content_no_fork (r0 : MVRegister) f1 f2 d1 d2 :
  reg_wf r0 -> reg_context r0 d1 = false -> reg_context r0 d2 = false -> stamp_lt d1 d2 ->
  hash f1 = hash f2 ->
  isForked (reg_joined (fst (reg_write r0 f1 d1)) (fst (reg_write r0 f2 d2))) = false.
Proof.
  intros Hr H1 H2 Hlt Hh.
  destruct (concurrent_writes_versions r0 f1 f2 d1 d2 Hr H1 H2 Hlt) as [E _].
  unfold isForked. rewrite E. cbn. rewrite Hh. unfold hash_eqb.
  destruct (ContentHash_eq_dec (hash f2) (hash f2)); [reflexivity|contradiction].
Qed.

(** Rule 6: resolving a fork — keeping one version or writing merged content — is a
    write that observed every version, so it supersedes them all: on every replica the
    register then holds the resolution alone, and is no longer forked. *)
Theorem rule6_resolution_supersedes_observed_versions (r x : MVRegister) f d :
  reg_wf r -> reg_wf x -> ctx_subset (reg_context x) (reg_context r) -> reg_context r d = false ->
  let m := reg_joined x (fst (reg_write r f d)) in
  reg_versions m = [mkVersion d f] /\ isForked m = false /\ mv_value m = Some f /\
  (forall v, In v (reg_versions x) -> ~ In v (reg_versions m)).
Proof.
  intros Hr Hx Hsub Hd m.
  destruct (rule2_register_causally_later_write_wins r x f d Hr Hx Hsub Hd) as [E _].
  unfold m, isForked, mv_value, reg_latest. rewrite E. cbn.
  unfold hash_eqb. destruct (ContentHash_eq_dec (hash f) (hash f)); [|contradiction].
  repeat split. intros v Hv [<-|[]].
  destruct Hx as [_ Hxin]. specialize (Hsub _ (Hxin _ Hv)). cbn in Hsub. congruence.
Qed.
