(** * ORSet.v — the add-wins observed-remove set.

    Mirrors [Sources/ConcordCore/ORSet/ORSet.swift]: per element the dots of its
    surviving adds, one context for the whole set; [joined] runs [DotStore.join] per
    element on the dots wrapped as [Add] (a [Dotted] whose dot is the stamp itself). *)

From Coq Require Import Arith Lia Bool List.
From Concord Require Import Stamp Context DotStore.
Import ListNotations.

Section ORSet.
  Context {Element : Type} (element_eq_dec : forall a b : Element, {a = b} + {a <> b}).

  (** [struct ORSet<Element> { adds: [Element: [Stamp]]; context: CausalContext }];
      an element without adds maps to [[]] (Swift stores no key for it). *)
  Record ORSet := mkORSet { or_adds : Element -> list Stamp; or_context : CausalContext }.

  (** [private struct Add: Dotted { let dot: Stamp }] *)
  Definition add_dot (s : Stamp) : Stamp := s.

  (** [init()] *)
  Definition or_empty : ORSet := mkORSet (fun _ => []) ctx_empty.

  (** [func joined(_ other: ORSet) -> ORSet] *)
  Definition or_joined (self other : ORSet) : ORSet :=
    mkORSet (fun e => dotstore_join add_dot (or_adds self e) (or_context self)
                                            (or_adds other e) (or_context other))
            (ctx_union (or_context self) (or_context other)).

  (** [func contains(_ element:)] = [adds[element] != nil] *)
  Definition or_contains (s : ORSet) (e : Element) : bool :=
    match or_adds s e with [] => false | _ => true end.

  (** [mutating func add(_ element:, dot:) -> ORSet]: new set and delta. *)
  Definition or_add (s : ORSet) (e : Element) (d : Stamp) : ORSet * ORSet :=
    let deltaContext := ctx_insert (ctx_of_dots (or_adds s e)) d in
    let delta := mkORSet (fun e' => if element_eq_dec e' e then [d] else []) deltaContext in
    (or_joined s delta, delta).

  (** [mutating func remove(_ element:) -> ORSet]: new set and delta. *)
  Definition or_remove (s : ORSet) (e : Element) : ORSet * ORSet :=
    let delta := mkORSet (fun _ => []) (ctx_of_dots (or_adds s e)) in
    (or_joined s delta, delta).

  (** [_checkInvariants()]: dots sorted, every dot seen. *)
  Definition or_wf (s : ORSet) : Prop :=
    forall e, ordered add_dot (or_adds s e) /\
              forall d, In d (or_adds s e) -> or_context s d = true.

  Lemma or_lookup_single (d y : Stamp) :
    lookup add_dot [d] y = if stamp_eqb d y then Some d else None.
  Proof. reflexivity. Qed.

  Lemma or_filter_own (l : list Stamp) :
    dotstore_join add_dot l ctx_empty [] (ctx_of_dots l) = [].
  Proof.
    rewrite dotstore_join_merge, merge_nil_r.
    assert (H : forall l', (forall y, In y l' -> In y l) ->
                filter (fun y => negb (ctx_of_dots l (add_dot y))) l' = []).
    { induction l' as [|y l' IH]; intro Hin; [reflexivity|]. cbn.
      replace (ctx_of_dots l (add_dot y)) with true
        by (symmetry; apply ctx_of_dots_spec, Hin; left; reflexivity).
      apply IH. intros z Hz; apply Hin; right; assumption. }
    apply H. auto.
  Qed.

  (** What the adder holds for [e] after [add(e, dot: d)]: its new dot alone. *)
  Lemma or_add_adds (s : ORSet) (e : Element) (d : Stamp) :
    or_wf s -> or_context s d = false -> or_adds (fst (or_add s e d)) e = [d].
  Proof.
    intros Hwf Hd. destruct (Hwf e) as [Ho Hin].
    unfold or_add, or_joined; cbn [fst or_adds or_context].
    destruct (element_eq_dec e e) as [_|]; [|contradiction].
    apply (ordered_lookup_ext add_dot);
      [apply dotstore_join_ordered; [assumption|repeat constructor] | repeat constructor |].
    intro y. rewrite lookup_dotstore_join by (first [assumption | repeat constructor]).
    rewrite or_lookup_single.
    destruct (stamp_eqb_spec d y) as [Hy|Hne].
    - subst y. destruct (lookup add_dot (or_adds s e) d) eqn:E; [|cbn; rewrite Hd; reflexivity].
      apply lookup_some in E as [E1 E2]. unfold add_dot in E1; subst.
      rewrite Hin in Hd by assumption. discriminate.
    - destruct (lookup add_dot (or_adds s e) y) eqn:E; [|reflexivity].
      apply lookup_some in E as [E1 E2]. cbn. unfold ctx_insert.
      replace (ctx_of_dots (or_adds s e) y) with true; [reflexivity|].
      symmetry. apply ctx_of_dots_spec. unfold add_dot in E1; subst; assumption.
  Qed.

  Lemma or_add_context (s : ORSet) (e : Element) (d : Stamp) :
    or_wf s -> ctx_eq (or_context (fst (or_add s e d))) (ctx_insert (or_context s) d).
  Proof.
    intros Hwf y. destruct (Hwf e) as [_ Hin]. cbn. unfold ctx_union, ctx_insert.
    destruct (or_context s y) eqn:Hy; [reflexivity|]. cbn.
    destruct (ctx_of_dots (or_adds s e) y) eqn:E; [|reflexivity].
    apply ctx_of_dots_spec, Hin in E. congruence.
  Qed.

  (** What the remover holds for [e] after [remove(e)]: nothing. *)
  Lemma or_remove_adds (s : ORSet) (e : Element) :
    or_wf s -> or_adds (fst (or_remove s e)) e = [].
  Proof.
    intro Hwf. destruct (Hwf e) as [Ho _]. cbn.
    rewrite (dotstore_join_ctx_local add_dot (or_context s) (ctx_of_dots (or_adds s e))
                                     ctx_empty (ctx_of_dots (or_adds s e)))
      by (intros; first [contradiction | reflexivity]).
    apply or_filter_own.
  Qed.

  Lemma or_remove_context (s : ORSet) (e : Element) :
    or_wf s -> ctx_eq (or_context (fst (or_remove s e))) (or_context s).
  Proof.
    intros Hwf y. destruct (Hwf e) as [_ Hin]. cbn. unfold ctx_union.
    destruct (or_context s y) eqn:Hy; [reflexivity|]. cbn.
    destruct (ctx_of_dots (or_adds s e) y) eqn:E; [|reflexivity].
    apply ctx_of_dots_spec, Hin in E. congruence.
  Qed.

  (** ** Rule 3: concurrent [add(x)] and [remove(x)] — add wins.

      From a common state [s0] holding [x], one replica removes [x] while another adds
      it again with a fresh dot [d]; after the exchange, in either order of joining,
      [x] is in the set.  (The proof text of this theorem is checked byte for byte
      against the remove-wins mutant in [Mutants/ORSetRemoveWins.v], where it fails.) *)
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

  (** A remove removes exactly the adds it observed: joining a remove's delta keeps
      precisely the adds of the element the remover had not seen. *)
  Theorem rule3_remove_removes_exactly_observed (s t : ORSet) (x : Element) :
    or_adds (or_joined t (snd (or_remove s x))) x =
    filter (fun d => negb (ctx_of_dots (or_adds s x) d)) (or_adds t x).
  Proof. cbn. rewrite dotstore_join_merge, merge_nil_r. reflexivity. Qed.

  (** An add survives every join with a state that has not seen it. *)
  Theorem rule3_unseen_add_survives (s t : ORSet) (x : Element) (d : Stamp) :
    or_wf s -> or_wf t -> In d (or_adds t x) -> or_context s d = false ->
    In d (or_adds (or_joined s t) x) /\ In d (or_adds (or_joined t s) x).
  Proof.
    intros Hs Ht Hin Hd. destruct (Hs x) as [Hso Hsin], (Ht x) as [Hto _].
    assert (Hls : lookup add_dot (or_adds s x) d = None).
    { destruct (lookup add_dot (or_adds s x) d) eqn:E; [|reflexivity].
      apply lookup_some in E as [E1 E2]. unfold add_dot in E1; subst.
      rewrite Hsin in Hd by assumption. discriminate. }
    assert (Hlt : lookup add_dot (or_adds t x) d = Some d)
      by (apply (lookup_ordered_in add_dot); assumption).
    cbn [or_joined or_adds or_context]. split;
      (apply (in_lookup_ordered add_dot); [apply dotstore_join_ordered; assumption|]);
      change (add_dot d) with d; rewrite lookup_dotstore_join by assumption;
      rewrite Hls, Hlt; cbn [join_at]; rewrite ?Hd; reflexivity.
  Qed.

  (** ** The OR-set is a join-semilattice *)

  Definition or_eq (a b : ORSet) : Prop :=
    (forall e, or_adds a e = or_adds b e) /\ ctx_eq (or_context a) (or_context b).

  Lemma agree_stamps (l r : list Stamp) : agree add_dot l r.
  Proof. intros x y _ _ E. exact E. Qed.

  Theorem or_joined_comm a b : or_wf a -> or_wf b -> or_eq (or_joined a b) (or_joined b a).
  Proof.
    intros Ha Hb. split; cbn.
    - intro e. apply dotstore_join_comm; [apply Ha | apply Hb | apply agree_stamps].
    - apply ctx_union_comm.
  Qed.

  Theorem or_joined_assoc a b c :
    or_wf a -> or_wf b -> or_wf c ->
    or_eq (or_joined (or_joined a b) c) (or_joined a (or_joined b c)).
  Proof.
    intros Ha Hb Hc. split; cbn.
    - intro e. apply dotstore_join_assoc; [apply Ha | apply Hb | apply Hc].
    - apply ctx_union_assoc.
  Qed.

  Theorem or_joined_idem a : or_wf a -> or_eq (or_joined a a) a.
  Proof.
    intro Ha. split; cbn.
    - intro e. apply dotstore_join_idem, Ha.
    - apply ctx_union_idem.
  Qed.

  Lemma or_joined_wf a b : or_wf a -> or_wf b -> or_wf (or_joined a b).
  Proof.
    intros Ha Hb e. destruct (Ha e) as [Hao Hain], (Hb e) as [Hbo Hbin]. split; cbn.
    - apply dotstore_join_ordered; assumption.
    - intros d Hd. unfold ctx_union. apply dotstore_join_incl in Hd as [Hd|Hd].
      + rewrite Hain; auto.
      + rewrite Hbin; auto using orb_true_r.
  Qed.

  Lemma or_joined_congr a a' b b' :
    or_eq a a' -> or_eq b b' -> or_eq (or_joined a b) (or_joined a' b').
  Proof.
    intros [Ha Ha'] [Hb Hb']. split; cbn.
    - intro e. rewrite Ha, Hb. apply dotstore_join_ctx_ext; assumption.
    - intro d; unfold ctx_union; rewrite Ha', Hb'; reflexivity.
  Qed.
End ORSet.
