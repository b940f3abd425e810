(** * DotStore.v — the one merge rule every Concord CRDT is built from.

    Mirrors [Sources/ConcordCore/DotStore/DotStore.swift]:
    [DotStore.join(_:seenBy:_:seenBy:)] and [DotStore.isWellOrdered(_:)], generic over
    anything [Dotted] (here: any type [E] with a projection [dot : E -> Stamp]).

    The Swift function walks two lists sorted by dot with two indices.  [merge] below is
    that loop written as structural recursion, case for case; [dotstore_join] adds the two
    early returns for an empty side.  Its meaning is [join_at], dot by dot
    ([lookup_dotstore_join]), and every law is proved on [join_at] and carried back to
    the lists by [ordered_lookup_ext]: two well-ordered lists with the same entry at every
    dot are equal — sorted lists are a canonical form, so the laws below are plain
    equalities of lists. *)

From Coq Require Import Arith Lia Bool List Sorted.
From Concord Require Import Stamp Context.
Import ListNotations.

Section DotStore.
  Context {E : Type} (dot : E -> Stamp).

  Definition dot_lt (a b : E) : Prop := stamp_lt (dot a) (dot b).

  (** [isWellOrdered]: each entry's dot is below the next one's. *)
  Definition isWellOrdered (l : list E) : Prop := Sorted dot_lt l.

  (** The same, stated for every pair (the form the proofs use). *)
  Definition ordered (l : list E) : Prop := StronglySorted dot_lt l.

  Lemma dot_lt_trans a b c : dot_lt a b -> dot_lt b c -> dot_lt a c.
  Proof. apply stamp_lt_trans. Qed.

  Lemma isWellOrdered_ordered l : isWellOrdered l <-> ordered l.
  Proof.
    split.
    - apply Sorted_StronglySorted. intros a b c; apply dot_lt_trans.
    - apply StronglySorted_Sorted.
  Qed.

  (** The entry of a list with dot [d], if any. *)
  Fixpoint lookup (l : list E) (d : Stamp) : option E :=
    match l with
    | [] => None
    | x :: xs => if stamp_eqb (dot x) d then Some x else lookup xs d
    end.

  (** The join, at one dot: keep an entry both sides hold (the left one), or one side
      holds and the other has not seen. *)
  Definition join_at (a : option E) (aSeen : bool) (b : option E) (bSeen : bool) : option E :=
    match a, b with
    | Some x, Some _ => Some x
    | Some x, None => if bSeen then None else Some x
    | None, Some y => if aSeen then None else Some y
    | None, None => None
    end.

  (** The loop of [DotStore.join]: [i] walks [l], [j] walks [r]. *)
  Fixpoint merge (lc rc : CausalContext) (l : list E) : list E -> list E :=
    match l with
    | [] => fun r => filter (fun y => negb (lc (dot y))) r
    | x :: xs =>
        fix merge_r (r : list E) : list E :=
          match r with
          | [] => filter (fun x' => negb (rc (dot x'))) (x :: xs)
          | y :: ys =>
              if stamp_ltb (dot x) (dot y) then
                (if rc (dot x) then [] else [x]) ++ merge lc rc xs r
              else if stamp_ltb (dot y) (dot x) then
                (if lc (dot y) then [] else [y]) ++ merge_r ys
              else x :: merge lc rc xs ys
          end
    end.

  (** [static func join(_ left:, seenBy leftContext:, _ right:, seenBy rightContext:)] *)
  Definition dotstore_join (left : list E) (leftContext : CausalContext)
                           (right : list E) (rightContext : CausalContext) : list E :=
    match left, right with
    | [], _ => filter (fun y => negb (leftContext (dot y))) right
    | _, [] => filter (fun x => negb (rightContext (dot x))) left
    | _, _ => merge leftContext rightContext left right
    end.

  Lemma dotstore_join_merge l lc r rc : dotstore_join l lc r rc = merge lc rc l r.
  Proof. destruct l, r; reflexivity. Qed.

  Lemma merge_nil_l lc rc r : merge lc rc [] r = filter (fun y => negb (lc (dot y))) r.
  Proof. reflexivity. Qed.

  Lemma merge_nil_r lc rc l : merge lc rc l [] = filter (fun x => negb (rc (dot x))) l.
  Proof. destruct l; reflexivity. Qed.

  Lemma merge_cons lc rc x xs y ys :
    merge lc rc (x :: xs) (y :: ys) =
      if stamp_ltb (dot x) (dot y) then
        (if rc (dot x) then [] else [x]) ++ merge lc rc xs (y :: ys)
      else if stamp_ltb (dot y) (dot x) then
        (if lc (dot y) then [] else [y]) ++ merge lc rc (x :: xs) ys
      else x :: merge lc rc xs ys.
  Proof. reflexivity. Qed.

  (** ** Lookups *)

  Lemma lookup_some l d x : lookup l d = Some x -> dot x = d /\ In x l.
  Proof.
    induction l as [|y l IH]; simpl; [discriminate|].
    destruct (stamp_eqb_spec (dot y) d).
    - intro H; inversion H; subst; auto.
    - intro H; destruct (IH H); auto.
  Qed.

  Lemma lookup_none l d : (forall x, In x l -> dot x <> d) -> lookup l d = None.
  Proof.
    induction l as [|y l IH]; simpl; intro H; [reflexivity|].
    destruct (stamp_eqb_spec (dot y) d).
    - exfalso; exact (H y (or_introl eq_refl) e).
    - apply IH; auto.
  Qed.

  Lemma lookup_none_notin l d x : lookup l d = None -> In x l -> dot x <> d.
  Proof.
    induction l as [|y l IH]; simpl; [tauto|].
    destruct (stamp_eqb_spec (dot y) d); [discriminate|].
    intros H [<-|Hin]; auto.
  Qed.

  Lemma lookup_in_some l x : In x l -> exists y, lookup l (dot x) = Some y.
  Proof.
    intro Hin. destruct (lookup l (dot x)) eqn:H; [eauto|].
    exfalso. exact (lookup_none_notin l (dot x) x H Hin eq_refl).
  Qed.

  Lemma ordered_cons l x : ordered (x :: l) -> ordered l /\ (forall y, In y l -> dot_lt x y).
  Proof.
    intro H. apply StronglySorted_inv in H as [H1 H2]. split; [assumption|].
    apply Forall_forall; assumption.
  Qed.

  Lemma lookup_ordered_in l x : ordered l -> In x l -> lookup l (dot x) = Some x.
  Proof.
    induction l as [|y l IH]; simpl; [tauto|].
    intros Ho [<-|Hin]; [rewrite stamp_eqb_refl; reflexivity|].
    apply ordered_cons in Ho as [Ho Hlt].
    destruct (stamp_eqb_spec (dot y) (dot x)) as [E'|].
    - exfalso. specialize (Hlt x Hin). unfold dot_lt in Hlt. rewrite E' in Hlt.
      exact (stamp_lt_irrefl _ Hlt).
    - auto.
  Qed.

  (** Nothing in an ordered list lies below its head. *)
  Lemma lookup_below_head l y d : ordered (y :: l) -> stamp_lt d (dot y) -> lookup (y :: l) d = None.
  Proof.
    intros Ho Hd. apply lookup_none. intros z Hz E'. subst d.
    destruct Hz as [<-|Hz]; [exact (stamp_lt_irrefl _ Hd)|].
    apply ordered_cons in Ho as [_ Hlt]. specialize (Hlt z Hz). unfold dot_lt in Hlt.
    exact (stamp_lt_asym _ _ Hd Hlt).
  Qed.

  Lemma lookup_tail_head l y : ordered (y :: l) -> lookup l (dot y) = None.
  Proof.
    intro Ho. apply ordered_cons in Ho as [_ Hlt]. apply lookup_none.
    intros z Hz E'. specialize (Hlt z Hz). unfold dot_lt in Hlt. rewrite E' in Hlt.
    exact (stamp_lt_irrefl _ Hlt).
  Qed.

  Lemma lookup_filter (c : CausalContext) l d :
    lookup (filter (fun y => negb (c (dot y))) l) d = if c d then None else lookup l d.
  Proof.
    induction l as [|y l IH]; simpl; [destruct (c d); reflexivity|].
    destruct (stamp_eqb_spec (dot y) d) as [<-|Hne].
    - destruct (c (dot y)) eqn:Hc; simpl.
      + exact IH.
      + rewrite stamp_eqb_refl. reflexivity.
    - destruct (c (dot y)); simpl; [exact IH|].
      rewrite (stamp_eqb_neq _ _ Hne). exact IH.
  Qed.

  Lemma ordered_filter (f : E -> bool) l : ordered l -> ordered (filter f l).
  Proof.
    induction l as [|x l IH]; simpl; intro Ho; [constructor|].
    apply ordered_cons in Ho as [Ho Hlt].
    destruct (f x); [|apply IH; assumption]. constructor; [apply IH; assumption|].
    apply Forall_forall. intros y Hy. apply filter_In in Hy as [Hy _]. auto.
  Qed.

  (** ** Two ordered lists with the same entry at every dot are equal *)

  Lemma ordered_lookup_ext l1 l2 :
    ordered l1 -> ordered l2 -> (forall d, lookup l1 d = lookup l2 d) -> l1 = l2.
  Proof.
    revert l2; induction l1 as [|x xs IH]; intros [|y ys] H1 H2 H.
    - reflexivity.
    - specialize (H (dot y)); simpl in H; rewrite stamp_eqb_refl in H; discriminate.
    - specialize (H (dot x)); simpl in H; rewrite stamp_eqb_refl in H; discriminate.
    - destruct (stamp_trichotomy (dot x) (dot y)) as [Hlt|[Heq|Hlt]].
      + specialize (H (dot x)). rewrite (lookup_below_head ys y (dot x) H2 Hlt) in H.
        simpl in H. rewrite stamp_eqb_refl in H. discriminate.
      + assert (x = y) as <-.
        { specialize (H (dot x)). simpl in H. rewrite stamp_eqb_refl, Heq, stamp_eqb_refl in H.
          inversion H; reflexivity. }
        f_equal. apply IH.
        * apply ordered_cons in H1; tauto.
        * apply ordered_cons in H2; tauto.
        * intro d. specialize (H d). simpl in H.
          destruct (stamp_eqb_spec (dot x) d) as [Hd|Hd]; [|exact H].
          subst d. rewrite (lookup_tail_head xs x H1), (lookup_tail_head ys x H2). reflexivity.
      + specialize (H (dot y)). rewrite (lookup_below_head xs x (dot y) H1 Hlt) in H.
        simpl in H. rewrite stamp_eqb_refl in H. discriminate.
  Qed.

  (** ** The merge keeps entries, keeps order, and means [join_at] *)

  Lemma merge_incl lc rc l r z : In z (merge lc rc l r) -> In z l \/ In z r.
  Proof.
    revert r; induction l as [|x xs IH]; intro r.
    - rewrite merge_nil_l. intro H; apply filter_In in H; tauto.
    - induction r as [|y ys IHr].
      + rewrite merge_nil_r. intro H; apply filter_In in H; tauto.
      + rewrite merge_cons.
        destruct (stamp_ltb (dot x) (dot y)).
        * intro H; apply in_app_or in H as [H|H].
          -- destruct (rc (dot x)); simpl in H; [contradiction|]. destruct H as [<-|[]]; simpl; auto.
          -- destruct (IH _ H); simpl; auto.
        * destruct (stamp_ltb (dot y) (dot x)).
          -- intro H; apply in_app_or in H as [H|H].
             ++ destruct (lc (dot y)); simpl in H; [contradiction|]. destruct H as [<-|[]]; simpl; auto.
             ++ destruct (IHr H); simpl; auto.
          -- intros [<-|H]; [simpl; auto|]. destruct (IH _ H); simpl; auto.
  Qed.

  Lemma merge_ordered lc rc l r : ordered l -> ordered r -> ordered (merge lc rc l r).
  Proof.
    revert r; induction l as [|x xs IH]; intros r Hl Hr.
    - rewrite merge_nil_l. apply ordered_filter; assumption.
    - induction r as [|y ys IHr].
      + rewrite merge_nil_r. apply ordered_filter; assumption.
      + pose proof (ordered_cons _ _ Hl) as [Hxs Hx].
        pose proof (ordered_cons _ _ Hr) as [Hys Hy].
        rewrite merge_cons.
        destruct (stamp_ltb (dot x) (dot y)) eqn:Hxy.
        * destruct (rc (dot x)); cbn [app]; [apply IH; assumption|].
          constructor; [apply IH; assumption|]. apply Forall_forall. intros z Hz.
          destruct (merge_incl _ _ _ _ _ Hz) as [Hz'|[<-|Hz']]; auto.
          apply (dot_lt_trans _ y); [exact Hxy|auto].
        * destruct (stamp_ltb (dot y) (dot x)) eqn:Hyx.
          -- destruct (lc (dot y)); cbn [app]; [apply IHr; assumption|].
             constructor; [apply IHr; assumption|]. apply Forall_forall. intros z Hz.
             destruct (merge_incl _ _ _ _ _ Hz) as [[<-|Hz']|Hz']; auto.
             apply (dot_lt_trans _ x); [exact Hyx|auto].
          -- pose proof (stamp_ltb_false_false _ _ Hxy Hyx) as Heq.
             constructor; [apply IH; assumption|]. apply Forall_forall. intros z Hz.
             destruct (merge_incl _ _ _ _ _ Hz) as [Hz'|Hz']; auto.
             unfold dot_lt; rewrite Heq; apply Hy; assumption.
  Qed.

  Lemma lookup_merge lc rc l r :
    ordered l -> ordered r ->
    forall d, lookup (merge lc rc l r) d = join_at (lookup l d) (lc d) (lookup r d) (rc d).
  Proof.
    revert r; induction l as [|x xs IH]; intros r Hl.
    - intros _ d. rewrite merge_nil_l, lookup_filter. simpl.
      destruct (lc d), (lookup r d); reflexivity.
    - induction r as [|y ys IHr]; intros Hr d.
      + rewrite merge_nil_r, lookup_filter. simpl (lookup [] d).
        destruct (lookup (x :: xs) d), (rc d); reflexivity.
      + pose proof (ordered_cons _ _ Hl) as [Hxs _].
        pose proof (ordered_cons _ _ Hr) as [Hys _].
        rewrite merge_cons.
        destruct (stamp_ltb (dot x) (dot y)) eqn:Hxy.
        * assert (IHd := IH (y :: ys) Hxs Hr d).
          destruct (stamp_eqb_spec (dot x) d) as [<-|Hne].
          -- rewrite (lookup_tail_head _ _ Hl), (lookup_below_head _ _ _ Hr Hxy) in IHd.
             simpl (lookup (x :: xs) (dot x)). rewrite stamp_eqb_refl.
             rewrite (lookup_below_head _ _ _ Hr Hxy).
             destruct (rc (dot x)); cbn [app lookup]; [exact IHd|]. rewrite stamp_eqb_refl; reflexivity.
          -- assert (Hl' : lookup (x :: xs) d = lookup xs d)
               by (simpl; rewrite (stamp_eqb_neq _ _ Hne); reflexivity).
             rewrite Hl'. destruct (rc (dot x)); cbn [app lookup]; [exact IHd|].
             rewrite (stamp_eqb_neq _ _ Hne). exact IHd.
        * destruct (stamp_ltb (dot y) (dot x)) eqn:Hyx.
          -- assert (IHd := IHr Hys d).
             destruct (stamp_eqb_spec (dot y) d) as [<-|Hne].
             ++ rewrite (lookup_tail_head _ _ Hr), (lookup_below_head _ _ _ Hl Hyx) in IHd.
                rewrite (lookup_below_head _ _ _ Hl Hyx).
                cbn [lookup]. rewrite stamp_eqb_refl.
                destruct (lc (dot y)); cbn [app lookup]; [exact IHd|]. rewrite stamp_eqb_refl; reflexivity.
             ++ assert (Hr' : lookup (y :: ys) d = lookup ys d)
                  by (simpl; rewrite (stamp_eqb_neq _ _ Hne); reflexivity).
                rewrite Hr'. destruct (lc (dot y)); cbn [app lookup]; [exact IHd|].
                rewrite (stamp_eqb_neq _ _ Hne). exact IHd.
          -- pose proof (stamp_ltb_false_false _ _ Hxy Hyx) as Heq.
             cbn [lookup]. rewrite Heq.
             destruct (stamp_eqb_spec (dot y) d) as [<-|Hne]; [reflexivity|].
             rewrite (IH ys Hxs Hys d). reflexivity.
  Qed.

  Lemma dotstore_join_ordered l lc r rc :
    ordered l -> ordered r -> ordered (dotstore_join l lc r rc).
  Proof. rewrite dotstore_join_merge. apply merge_ordered. Qed.

  Lemma lookup_dotstore_join l lc r rc :
    ordered l -> ordered r ->
    forall d, lookup (dotstore_join l lc r rc) d = join_at (lookup l d) (lc d) (lookup r d) (rc d).
  Proof. rewrite dotstore_join_merge. apply lookup_merge. Qed.

  Lemma dotstore_join_incl l lc r rc z : In z (dotstore_join l lc r rc) -> In z l \/ In z r.
  Proof. rewrite dotstore_join_merge. apply merge_incl. Qed.

  (** The contexts are consulted only at the dots of the other side's entries. *)
  Lemma merge_ctx_local lc rc lc' rc' l r :
    (forall y, In y r -> lc (dot y) = lc' (dot y)) ->
    (forall x, In x l -> rc (dot x) = rc' (dot x)) ->
    merge lc rc l r = merge lc' rc' l r.
  Proof.
    revert r; induction l as [|x xs IH]; intros r Hr Hl.
    - rewrite !merge_nil_l. apply filter_ext_in. intros y Hy. rewrite Hr; auto.
    - induction r as [|y ys IHr].
      + rewrite !merge_nil_r. apply filter_ext_in. intros z Hz. rewrite Hl; auto.
      + rewrite !merge_cons. rewrite (Hl x (or_introl eq_refl)), (Hr y (or_introl eq_refl)).
        destruct (stamp_ltb (dot x) (dot y)).
        * f_equal. apply IH; intros z Hz; [apply Hr|apply Hl]; simpl; auto.
        * destruct (stamp_ltb (dot y) (dot x)).
          -- f_equal. apply IHr; intros z Hz; apply Hr; simpl; auto.
          -- f_equal. apply IH; intros z Hz; [apply Hr|apply Hl]; simpl; auto.
  Qed.

  Lemma dotstore_join_ctx_local lc rc lc' rc' l r :
    (forall y, In y r -> lc (dot y) = lc' (dot y)) ->
    (forall x, In x l -> rc (dot x) = rc' (dot x)) ->
    dotstore_join l lc r rc = dotstore_join l lc' r rc'.
  Proof. rewrite !dotstore_join_merge. apply merge_ctx_local. Qed.

  Lemma dotstore_join_ctx_ext lc rc lc' rc' l r :
    ctx_eq lc lc' -> ctx_eq rc rc' -> dotstore_join l lc r rc = dotstore_join l lc' r rc'.
  Proof. intros H1 H2. apply dotstore_join_ctx_local; intros; auto. Qed.

  (** ** The laws, dot by dot *)

  Lemma join_at_comm a ac b bc :
    (forall x y, a = Some x -> b = Some y -> x = y) ->
    join_at a ac b bc = join_at b bc a ac.
  Proof.
    intro H. destruct a as [x|], b as [y|]; simpl; try reflexivity.
    rewrite (H x y eq_refl eq_refl). reflexivity.
  Qed.

  Lemma join_at_assoc a ac b bc c cc :
    join_at (join_at a ac b bc) (ac || bc) c cc = join_at a ac (join_at b bc c cc) (bc || cc).
  Proof. destruct a, b, c, ac, bc, cc; reflexivity. Qed.

  Lemma join_at_idem a ac : join_at a ac a ac = a.
  Proof. destruct a; reflexivity. Qed.

  (** Two lists agree when an entry they both hold at one dot is the same entry: a dot
      is unique, so two replicas holding an entry with the same dot hold the same
      payload ([Entry.swift]). *)
  Definition agree (l r : list E) : Prop :=
    forall x y, In x l -> In y r -> dot x = dot y -> x = y.

  (** ** The laws, on lists: commutative (given agreement), associative, idempotent *)

  Theorem dotstore_join_comm l lc r rc :
    ordered l -> ordered r -> agree l r ->
    dotstore_join l lc r rc = dotstore_join r rc l lc.
  Proof.
    intros Hl Hr Ha. apply ordered_lookup_ext; try apply dotstore_join_ordered; try assumption.
    intro d. rewrite !lookup_dotstore_join by assumption. apply join_at_comm.
    intros x y Hx Hy. apply lookup_some in Hx as [Hx1 Hx2]. apply lookup_some in Hy as [Hy1 Hy2].
    apply Ha; congruence.
  Qed.

  Theorem dotstore_join_assoc a ac b bc c cc :
    ordered a -> ordered b -> ordered c ->
    dotstore_join (dotstore_join a ac b bc) (ctx_union ac bc) c cc =
    dotstore_join a ac (dotstore_join b bc c cc) (ctx_union bc cc).
  Proof.
    intros Ha Hb Hc.
    apply ordered_lookup_ext; repeat apply dotstore_join_ordered; try assumption.
    intro d. rewrite !lookup_dotstore_join by (repeat apply dotstore_join_ordered; assumption).
    apply join_at_assoc.
  Qed.

  Theorem dotstore_join_idem l c : ordered l -> dotstore_join l c l c = l.
  Proof.
    intro Hl. apply ordered_lookup_ext; try apply dotstore_join_ordered; try assumption.
    intro d. rewrite lookup_dotstore_join by assumption. apply join_at_idem.
  Qed.

  Lemma agree_join l lc r rc z :
    agree l z -> agree r z -> agree (dotstore_join l lc r rc) z.
  Proof.
    intros H1 H2 x y Hx Hy Hd. destruct (dotstore_join_incl _ _ _ _ _ Hx); eauto.
  Qed.

  Lemma agree_sym l r : agree l r -> agree r l.
  Proof. intros H x y Hx Hy Hd. symmetry; apply H; auto. Qed.

  (** Membership in the join, read off [join_at]. *)
  Lemma in_dotstore_join l lc r rc x :
    ordered l -> ordered r ->
    In x (dotstore_join l lc r rc) <->
    lookup (dotstore_join l lc r rc) (dot x) = Some x.
  Proof.
    intros Hl Hr. split.
    - intro H. apply lookup_ordered_in; [apply dotstore_join_ordered|]; assumption.
    - intro H. apply lookup_some in H; tauto.
  Qed.

  Lemma in_lookup_ordered l x : ordered l -> (In x l <-> lookup l (dot x) = Some x).
  Proof.
    intro Hl. split; [apply lookup_ordered_in; assumption|].
    intro H. apply lookup_some in H; tauto.
  Qed.

  (** ** The overwrite shortcut of [apply]

      [StoreState.merge(_:into:seenHere:seenByOrigin:)] skips the loop when the right side
      has seen every entry of the left, and the left side has seen no entry of the right:
      the join is then the right list itself.  (A state's entries lie within its own
      context, so the left side's context covers its entries.) *)
  Lemma filter_keep (f : E -> bool) l : (forall x, In x l -> f x = true) -> filter f l = l.
  Proof.
    induction l as [|x l IH]; intro H; [reflexivity|]. cbn.
    rewrite (H x (or_introl eq_refl)). f_equal. apply IH. intros y Hy; apply H; right; assumption.
  Qed.

  Lemma filter_none (f : E -> bool) l : (forall x, In x l -> f x = false) -> filter f l = [].
  Proof.
    induction l as [|x l IH]; intro H; [reflexivity|]. cbn.
    rewrite (H x (or_introl eq_refl)). apply IH. intros y Hy; apply H; right; assumption.
  Qed.

  Lemma dotstore_join_overwrite l lc r rc :
    (forall x, In x l -> lc (dot x) = true /\ rc (dot x) = true) ->
    (forall y, In y r -> lc (dot y) = false) ->
    dotstore_join l lc r rc = r.
  Proof.
    intros Hl Hr. rewrite dotstore_join_merge. revert r Hr.
    induction l as [|x xs IH]; intros r Hr.
    - rewrite merge_nil_l. apply filter_keep. intros y Hy. rewrite (Hr y Hy). reflexivity.
    - induction r as [|y ys IHr].
      + rewrite merge_nil_r. apply filter_none. intros z Hz.
        destruct (Hl z Hz) as [_ Hz']. rewrite Hz'. reflexivity.
      + rewrite merge_cons. destruct (Hl x (or_introl eq_refl)) as [Hxl Hxr].
        destruct (stamp_ltb (dot x) (dot y)) eqn:E1.
        * rewrite Hxr. cbn. apply IH; [intros z Hz; apply Hl; right; assumption | assumption].
        * destruct (stamp_ltb (dot y) (dot x)) eqn:E2.
          -- rewrite (Hr y (or_introl eq_refl)). cbn. f_equal.
             apply IHr. intros z Hz; apply Hr; right; assumption.
          -- exfalso. pose proof (stamp_ltb_false_false _ _ E1 E2) as Hxy.
             pose proof (Hr y (or_introl eq_refl)) as Hy. rewrite <- Hxy in Hy. congruence.
  Qed.
End DotStore.

Arguments join_at {E} a aSeen b bSeen.
