(** * Rename.v — merging a fork of a replica's history.

    Mirrors [Sources/ConcordCore/Causality/DotRename.swift] ([DotRename.callAsFunction],
    [CausalContext.renaming]) and the entries of
    [Sources/ConcordCore/State/StoreState+Rename.swift] ([StoreState.renaming]: each
    slot's entries renamed, then sorted by dot again).

    Two copies of replica [a] wrote past stamp [p] (the end of their common prefix) under
    one id.  [rn] swaps the dots [(h, a)] and [(h, a')] for every [h > p]: one side's writes
    move to the fresh id [a'].  A slot is read through [lookup], which does not depend on
    the order of a list whose dots are distinct, so the sorting Swift does after renaming
    is stated as: any well-ordered list with the renamed list's entry at every dot.

    Results: the swap is an involution, hence injective on dots ([rn_involutive],
    [rn_injective]); it commutes with the join ([rename_commutes_with_join]); and after
    it the join of the kept side with the renamed side keeps every write of both sides
    past the fork ([fork_merge_keeps_both_sides]), where joined as they are a copy's
    write can be removed by the other copy's claim to have seen its stamp
    ([fork_unrenamed_can_lose]). *)

From Coq Require Import Arith Lia Bool List.
From Concord Require Import Stamp Context DotStore Values.
Import ListNotations.

Section Rename.
  (** [DotRename(replica: a, to: a', after: p)]; [init] refuses [a = a']. *)
  Variables (a a' p : ReplicaID).
  Hypothesis distinct : a <> a'.

  (** [func callAsFunction(_ stamp: Stamp) -> Stamp] *)
  Definition rn (d : Stamp) : Stamp :=
    if Nat.ltb p (hlc d) then
      if Nat.eqb (replica d) a then mkStamp (hlc d) a'
      else if Nat.eqb (replica d) a' then mkStamp (hlc d) a
      else d
    else d.

  Lemma rn_hlc d : hlc (rn d) = hlc d.
  Proof.
    unfold rn. destruct (Nat.ltb p (hlc d)); [|reflexivity].
    destruct (Nat.eqb (replica d) a); [reflexivity|]. destruct (Nat.eqb (replica d) a'); reflexivity.
  Qed.

  Theorem rn_involutive d : rn (rn d) = d.
  Proof.
    destruct d as [h r]. unfold rn at 2. simpl.
    destruct (Nat.ltb p h) eqn:Hp; [|unfold rn; simpl; rewrite Hp; reflexivity].
    destruct (Nat.eqb r a) eqn:Ha.
    - apply Nat.eqb_eq in Ha; subst r. unfold rn; simpl. rewrite Hp.
      destruct (Nat.eqb a' a) eqn:E; [apply Nat.eqb_eq in E; congruence|]. rewrite Nat.eqb_refl. reflexivity.
    - destruct (Nat.eqb r a') eqn:Ha'.
      + apply Nat.eqb_eq in Ha'; subst r. unfold rn; simpl. rewrite Hp, Nat.eqb_refl. reflexivity.
      + unfold rn; simpl. rewrite Hp, Ha, Ha'. reflexivity.
  Qed.

  Theorem rn_injective d e : rn d = rn e -> d = e.
  Proof. intro H. rewrite <- (rn_involutive d), <- (rn_involutive e), H. reflexivity. Qed.

  Lemma stamp_eqb_rn d e : stamp_eqb (rn d) e = stamp_eqb d (rn e).
  Proof.
    destruct (stamp_eqb_spec (rn d) e) as [<-|Hne]; [rewrite rn_involutive, stamp_eqb_refl; reflexivity|].
    destruct (stamp_eqb_spec d (rn e)) as [->|_]; [|reflexivity].
    rewrite rn_involutive in Hne. contradiction.
  Qed.

  (** [func renaming(_ rename: DotRename) -> CausalContext]: the renamed context holds
      [d] when the context held the dot [d] was renamed from, [rn d]. *)
  Definition ctx_rename (c : CausalContext) : CausalContext := fun d => c (rn d).

  Lemma ctx_rename_union c c' : ctx_eq (ctx_rename (ctx_union c c')) (ctx_union (ctx_rename c) (ctx_rename c')).
  Proof. intro d; reflexivity. Qed.

  (** An entry renamed: [Entry(dot: rename(dot), payload: payload)]. *)
  Definition er (x : Entry) : Entry := mkEntry (rn (dot x)) (payload x).

  Lemma lookup_map_er l d : lookup dot (map er l) d = option_map er (lookup dot l (rn d)).
  Proof.
    induction l as [|x xs IH]; [reflexivity|]. simpl.
    rewrite stamp_eqb_rn. destruct (stamp_eqb (dot x) (rn d)); [reflexivity|exact IH].
  Qed.

  Lemma join_at_map (o o' : option Entry) s s' :
    join_at (option_map er o) s (option_map er o') s' = option_map er (join_at o s o' s').
  Proof. destruct o, o', s, s'; reflexivity. Qed.

  (** Renaming two slots and joining them equals joining them and renaming the result:
      [l'] and [r'] are the renamed, re-sorted entries of [l] and [r]. *)
  Theorem rename_commutes_with_join l lc r rc l' r' :
    ordered dot l -> ordered dot r -> ordered dot l' -> ordered dot r' ->
    (forall d, lookup dot l' d = lookup dot (map er l) d) ->
    (forall d, lookup dot r' d = lookup dot (map er r) d) ->
    forall d, lookup dot (dotstore_join dot l' (ctx_rename lc) r' (ctx_rename rc)) d
            = lookup dot (map er (dotstore_join dot l lc r rc)) d.
  Proof.
    intros Hl Hr Hl' Hr' El Er d.
    rewrite (lookup_dotstore_join dot _ _ _ _ Hl' Hr'), El, Er, !lookup_map_er.
    unfold ctx_rename. rewrite join_at_map, (lookup_dotstore_join dot _ _ _ _ Hl Hr). reflexivity.
  Qed.

  (** So the re-sorted renamed join is the join of the re-sorted renamed slots. *)
  Theorem rename_commutes_with_join_sorted l lc r rc l' r' j' :
    ordered dot l -> ordered dot r -> ordered dot l' -> ordered dot r' -> ordered dot j' ->
    (forall d, lookup dot l' d = lookup dot (map er l) d) ->
    (forall d, lookup dot r' d = lookup dot (map er r) d) ->
    (forall d, lookup dot j' d = lookup dot (map er (dotstore_join dot l lc r rc)) d) ->
    j' = dotstore_join dot l' (ctx_rename lc) r' (ctx_rename rc).
  Proof.
    intros Hl Hr Hl' Hr' Hj El Er Ej.
    apply (ordered_lookup_ext dot); [assumption|apply dotstore_join_ordered; assumption|].
    intro d. rewrite Ej. symmetry. apply rename_commutes_with_join; assumption.
  Qed.

  (** The merge.  The kept side [l] (seen [lc]) and the other side [r] (seen [rc]) each
      hold only entries they have seen, and neither has seen a dot of the fresh id [a'].
      After the other side is renamed ([r'], seen [ctx_rename rc]), the join keeps every
      entry of the kept side written by [a] past [p], and every renamed entry of the other
      side written by [a] past [p] — whatever stamps the two copies issued. *)
  Theorem fork_merge_keeps_both_sides l lc r rc r' :
    ordered dot l -> ordered dot r -> ordered dot r' ->
    (forall d, lookup dot r' d = lookup dot (map er r) d) ->
    (forall x, In x l -> lc (dot x) = true) -> (forall y, In y r -> rc (dot y) = true) ->
    (forall h, lc (mkStamp h a') = false) -> (forall h, rc (mkStamp h a') = false) ->
    (forall x, In x l -> replica (dot x) = a -> p < hlc (dot x) ->
       lookup dot (dotstore_join dot l lc r' (ctx_rename rc)) (dot x) = Some x) /\
    (forall y, In y r -> replica (dot y) = a -> p < hlc (dot y) ->
       lookup dot (dotstore_join dot l lc r' (ctx_rename rc)) (dot (er y)) = Some (er y)).
  Proof.
    intros Hl Hr Hr' Er Hlc Hrc Fl Fr.
    assert (Hrn : forall s, replica s = a -> p < hlc s -> rn s = mkStamp (hlc s) a').
    { intros [h r0] Hs Hh; simpl in *; subst r0. unfold rn; simpl.
      rewrite (proj2 (Nat.ltb_lt p h) Hh), Nat.eqb_refl. reflexivity. }
    split.
    - intros x Hx Ha Hp.
      rewrite (lookup_dotstore_join dot _ _ _ _ Hl Hr'), Er, lookup_map_er.
      unfold ctx_rename. rewrite (Hrn _ Ha Hp), Fr, (lookup_ordered_in dot _ _ Hl Hx).
      rewrite (lookup_none dot r); [reflexivity|].
      intros y Hy E. specialize (Hrc y Hy). rewrite E, Fr in Hrc. discriminate.
    - intros y Hy Ha Hp.
      assert (Hd : dot (er y) = mkStamp (hlc (dot y)) a') by (simpl; apply Hrn; assumption).
      rewrite (lookup_dotstore_join dot _ _ _ _ Hl Hr'), Er, lookup_map_er.
      simpl (dot (er y)). rewrite rn_involutive, (lookup_ordered_in dot _ _ Hr Hy).
      rewrite (lookup_none dot l (rn (dot y))); [|].
      + rewrite (Hrn _ Ha Hp), Fl. reflexivity.
      + intros x Hx E. specialize (Hlc x Hx). rewrite E, (Hrn _ Ha Hp), Fl in Hlc. discriminate.
  Qed.
End Rename.

(** Why the rename: joined as they are, an entry the kept side wrote past the fork is
    removed by the other copy, whose context covers its stamp (its own later writes
    raised its version-vector entry for [a] past it) without holding it. *)
Theorem fork_unrenamed_can_lose :
  exists (x : Entry) (lc rc : CausalContext),
    lc (dot x) = true /\ rc (dot x) = true /\
    lookup dot (dotstore_join dot [x] lc [] rc) (dot x) = None.
Proof.
  exists (mkEntry (mkStamp 2 1) Marker), (ctx_of_vv (fun _ => 2)), (ctx_of_vv (fun _ => 3)).
  repeat split; reflexivity.
Qed.
