(** * Mutants/ORSetRemoveWins.v — a remove-wins OR-set, to show the rule-3 proof has teeth.

    A copy of the OR-set model of [ORSet.v] with one change: its join treats an element
    that one side does not hold as removed there, so a remove beats a concurrent add.
    Everything else — the add, the remove, the lemmas the rule-3 proof uses (re-proved
    here for the mutant, where they still hold) — is as in [ORSet.v].

    This file is expected NOT to compile: [make mutant-remove-wins] checks that the block
    between the BEGIN/END rule3 markers is byte for byte the one in [ORSet.v], and that
    [coqc] rejects this file inside that block.  Before it, [remove_wins_breaks_rule3]
    proves that the rule-3 statement is false for the mutant — the proof fails because
    the property fails, not because of a detail of the script. *)

From Coq Require Import Arith Lia Bool List.
From Concord Require Import Stamp Context DotStore.
Import ListNotations.

Section ORSet.
  Context {Element : Type} (element_eq_dec : forall a b : Element, {a = b} + {a <> b}).

  Record ORSet := mkORSet { or_adds : Element -> list Stamp; or_context : CausalContext }.

  Definition add_dot (s : Stamp) : Stamp := s.

  Definition or_contains (s : ORSet) (e : Element) : bool :=
    match or_adds s e with [] => false | _ => true end.

  (** THE MUTATION: an element one side does not hold counts as removed there. *)
  Definition or_joined (self other : ORSet) : ORSet :=
    mkORSet (fun e => if or_contains self e && or_contains other e
                      then dotstore_join add_dot (or_adds self e) (or_context self)
                                                 (or_adds other e) (or_context other)
                      else [])
            (ctx_union (or_context self) (or_context other)).

  Definition or_add (s : ORSet) (e : Element) (d : Stamp) : ORSet * ORSet :=
    let deltaContext := ctx_insert (ctx_of_dots (or_adds s e)) d in
    let delta := mkORSet (fun e' => if element_eq_dec e' e then [d] else []) deltaContext in
    (or_joined s delta, delta).

  Definition or_remove (s : ORSet) (e : Element) : ORSet * ORSet :=
    let delta := mkORSet (fun _ => []) (ctx_of_dots (or_adds s e)) in
    (or_joined s delta, delta).

  Definition or_wf (s : ORSet) : Prop :=
    forall e, ordered add_dot (or_adds s e) /\
              forall d, In d (or_adds s e) -> or_context s d = true.

  (** The lemmas the rule-3 proof uses, true of the mutant too. *)
  Lemma or_add_adds (s : ORSet) (e : Element) (d : Stamp) :
    or_wf s -> or_contains s e = true -> or_context s d = false -> or_adds (fst (or_add s e d)) e = [d].
  Proof.
    intros Hwf Hc Hd. destruct (Hwf e) as [Ho Hin].
    unfold or_add, or_joined; cbn [fst or_adds or_context].
    rewrite Hc. unfold or_contains; cbn [or_adds].
    destruct (element_eq_dec e e) as [_|]; [|contradiction]. cbn [andb].
    apply (ordered_lookup_ext add_dot);
      [apply dotstore_join_ordered; [assumption|repeat constructor] | repeat constructor |].
    intro y. rewrite lookup_dotstore_join by (first [assumption | repeat constructor]).
    change (lookup add_dot [d] y) with (if stamp_eqb d y then Some d else None).
    destruct (stamp_eqb_spec d y) as [Hy|Hne].
    - subst y. destruct (lookup add_dot (or_adds s e) d) eqn:E; [|cbn; rewrite Hd; reflexivity].
      apply lookup_some in E as [E1 E2]. unfold add_dot in E1; subst.
      rewrite Hin in Hd by assumption. discriminate.
    - destruct (lookup add_dot (or_adds s e) y) eqn:E; [|reflexivity].
      apply lookup_some in E as [E1 E2]. cbn. unfold ctx_insert.
      replace (ctx_of_dots (or_adds s e) y) with true; [reflexivity|].
      symmetry. apply ctx_of_dots_spec. unfold add_dot in E1; subst; assumption.
  Qed.

  Lemma or_remove_adds (s : ORSet) (e : Element) : or_wf s -> or_adds (fst (or_remove s e)) e = [].
  Proof. intros _. cbn. unfold or_contains; cbn. rewrite andb_false_r. reflexivity. Qed.

  Lemma or_remove_context (s : ORSet) (e : Element) :
    or_wf s -> ctx_eq (or_context (fst (or_remove s e))) (or_context s).
  Proof.
    intros Hwf y. destruct (Hwf e) as [_ Hin]. cbn. unfold ctx_union.
    destruct (or_context s y) eqn:Hy; [reflexivity|]. cbn.
    destruct (ctx_of_dots (or_adds s e) y) eqn:E; [|reflexivity].
    apply ctx_of_dots_spec, Hin in E. congruence.
  Qed.

  (** The rule-3 statement is false for the mutant: from a state holding [x] by one add,
      a concurrent remove and re-add lose [x]. *)
  Theorem remove_wins_breaks_rule3 (x : Element) :
    ~ (forall (s0 : ORSet) (d : Stamp),
         or_wf s0 -> or_contains s0 x = true -> or_context s0 d = false ->
         or_contains (or_joined (fst (or_remove s0 x)) (fst (or_add s0 x d))) x = true).
  Proof.
    intro H.
    set (a := mkStamp 1 1).
    set (s0 := mkORSet (fun e => if element_eq_dec e x then [a] else []) (ctx_of_dots [a])).
    assert (Hwf : or_wf s0).
    { intro e. unfold s0; cbn [or_adds or_context]. destruct (element_eq_dec e x).
      - split; [repeat constructor|]. intros d Hd. apply ctx_of_dots_spec. exact Hd.
      - split; [constructor | intros d []]. }
    assert (Hx : or_contains s0 x = true).
    { unfold or_contains, s0; cbn [or_adds]. destruct (element_eq_dec x x); [reflexivity|contradiction]. }
    specialize (H s0 (mkStamp 2 2) Hwf Hx eq_refl).
    unfold or_joined, or_remove, or_add, s0 in H. unfold or_contains in H. cbn in H.
    unfold or_contains in H. cbn in H.
    revert H. destruct (element_eq_dec x x) as [_|]; [|contradiction]. cbn. intro H. discriminate.
  Qed.

  (** ... and the proof script of [ORSet.v], copied verbatim, is rejected. *)
  (* BEGIN rule3 *)
  Theorem rule3_add_wins_over_concurrent_remove (s0 : ORSet) (x : Element) (d : Stamp) :
    or_wf s0 -> or_contains s0 x = true -> or_context s0 d = false ->
    or_contains (or_joined (fst (or_remove s0 x)) (fst (or_add s0 x d))) x = true /\
    or_contains (or_joined (fst (or_add s0 x d)) (fst (or_remove s0 x))) x = true.
  Proof.
    intros Hwf Hx Hd.
    assert (HA : or_adds (fst (or_remove s0 x)) x = []) by (apply or_remove_adds; assumption).
    assert (HB : or_adds (fst (or_add s0 x d)) x = [d]) by (apply or_add_adds; assumption).
    assert (HAd : or_context (fst (or_remove s0 x)) d = false)
      by (rewrite (or_remove_context s0 x Hwf d); assumption).
    unfold or_contains, or_joined; cbn [or_adds or_context].
    rewrite HA, HB, !dotstore_join_merge, merge_nil_l, merge_nil_r.
    cbn [filter]. unfold add_dot. rewrite HAd. split; reflexivity.
  Qed.
  (* END rule3 *)
End ORSet.
