(** * Convergence.v — strong eventual consistency.

    Replicas that applied the same set of deltas — in any order allowed by causal
    delivery, with duplicates — hold equal states (docs/ARCHITECTURE.md §2 rule 8, §7
    "Converged").  The proof characterises a fold of joins dot by dot: a context holds a
    dot when some state did; an entry survives when some state holds it and every state
    that does not hold it has not seen it.  These conditions depend only on the set of
    states joined, never on their order or multiplicity. *)

From Coq Require Import Arith Lia Bool List String.
From Concord Require Import Stamp Context DotStore Values StoreState Delta Replica Rules.
Import ListNotations.

(** Dot uniqueness across a whole history: one global assignment [G] of entries to
    (slot, dot) that every state draws from — a dot names one write, which put one
    payload in each slot it touched. *)
Definition Oracle := string -> string -> SlotKey -> Stamp -> Entry.

Definition agrees (G : Oracle) (s : StoreState) : Prop :=
  forall c i k e, In e (entries (slot_at s c i k)) -> G c i k (dot e) = e.

Definition Good (G : Oracle) (s : StoreState) : Prop := state_wf s /\ agrees G s.

Definition has (s : StoreState) c i k x : bool :=
  match lookup dot (entries (slot_at s c i k)) x with Some _ => true | None => false end.

Definition eff (s : StoreState) c i k x : bool := seenBy (context s) (slot_at s c i k) x.

(** ** One join, dot by dot *)

Lemma joined_agrees G a b : agrees G a -> agrees G b -> agrees G (joined a b).
Proof.
  intros Ha Hb c i k e He. rewrite slot_at_joined in He. unfold joinSlots in He; cbn [entries] in He.
  apply dotstore_join_incl in He as [He|He]; [apply Ha | apply Hb]; assumption.
Qed.

Lemma joined_Good G a b : Good G a -> Good G b -> Good G (joined a b).
Proof. intros [Ha Ha'] [Hb Hb']. split; [apply joined_wf | apply joined_agrees]; assumption. Qed.

Lemma Good_lookup G s c i k x e : Good G s -> lookup dot (entries (slot_at s c i k)) x = Some e -> e = G c i k x.
Proof. intros [_ Ha] H. apply lookup_some in H as [<- H]. symmetry. apply Ha. exact H. Qed.

Lemma has_joined a b c i k x :
  state_wf a -> state_wf b ->
  has (joined a b) c i k x =
  (has a c i k x || has b c i k x) && (has a c i k x || negb (eff a c i k x)) &&
  (has b c i k x || negb (eff b c i k x)).
Proof.
  intros Ha Hb. unfold has, eff. rewrite lookup_joined by assumption.
  destruct (lookup dot (entries (slot_at a c i k)) x), (lookup dot (entries (slot_at b c i k)) x);
    cbn; try reflexivity; destruct (seenBy _ _ x); reflexivity.
Qed.

Lemma scope_joined a b c i k x :
  scope (slot_at (joined a b) c i k) x =
  (scope (slot_at a c i k) x || scope (slot_at b c i k) x) && negb (context a x || context b x).
Proof. reflexivity. Qed.

(** ** A fold of joins, dot by dot *)

Definition big_ctx (l : list StoreState) x : bool := existsb (fun s => context s x) l.
Definition big_scope (l : list StoreState) c i k x : bool :=
  existsb (fun s => scope (slot_at s c i k) x) l && negb (big_ctx l x).
Definition big_has (l : list StoreState) c i k x : bool :=
  existsb (fun s => has s c i k x) l && forallb (fun s => has s c i k x || negb (eff s c i k x)) l.

Lemma fold_char G : forall l s,
  Good G s -> (forall y, In y l -> Good G y) ->
  let F := fold_left joined l s in
  Good G F /\
  (forall x, context F x = big_ctx (s :: l) x) /\
  (forall c i k x, scope (slot_at F c i k) x = big_scope (s :: l) c i k x) /\
  (forall c i k x, has F c i k x = big_has (s :: l) c i k x).
Proof.
  induction l as [|y l IH]; intros s Hs Hl F.
  - split; [exact Hs|]. unfold F; cbn [fold_left]. split; [|split].
    + intro x. unfold big_ctx; cbn. rewrite orb_false_r. reflexivity.
    + intros c i k x. unfold big_scope, big_ctx; cbn. rewrite !orb_false_r.
      destruct (scope (slot_at s c i k) x) eqn:S; [|reflexivity].
      destruct Hs as [Hw _]. destruct (Hw c i k) as [_ [_ Hd]]. rewrite (Hd x S). reflexivity.
    + intros c i k x. unfold big_has; cbn. rewrite orb_false_r, andb_true_r.
      destruct (has s c i k x); reflexivity.
  - assert (Hy : Good G y) by (apply Hl; left; reflexivity).
    assert (Hj : Good G (joined s y)) by (apply joined_Good; assumption).
    destruct (IH (joined s y) Hj (fun z Hz => Hl z (or_intror Hz))) as [HF [Hc [Hsc Hh]]].
    unfold F; cbn [fold_left]. split; [exact HF|]. split; [|split].
    + intro x. rewrite Hc. unfold big_ctx; cbn. unfold ctx_union. rewrite orb_assoc. reflexivity.
    + intros c i k x. rewrite Hsc. unfold big_scope, big_ctx; cbn [existsb].
      rewrite scope_joined. cbn [joined context]. unfold ctx_union.
      destruct (scope (slot_at s c i k) x), (scope (slot_at y c i k) x), (context s x), (context y x),
               (existsb (fun s0 => scope (slot_at s0 c i k) x) l), (existsb (fun s0 => context s0 x) l);
        reflexivity.
    + intros c i k x. rewrite Hh. unfold big_has; cbn [existsb forallb].
      rewrite has_joined by (apply Hs || apply Hy).
      assert (Ej : eff (joined s y) c i k x = eff s c i k x || eff y c i k x).
      { unfold eff, seenBy. rewrite scope_joined. cbn [joined context]. unfold ctx_union.
        destruct (scope (slot_at s c i k) x), (scope (slot_at y c i k) x), (context s x), (context y x);
          reflexivity. }
      rewrite Ej.
      destruct (has s c i k x), (has y c i k x), (eff s c i k x), (eff y c i k x),
               (existsb (fun s0 => has s0 c i k x) l),
               (forallb (fun s0 => has s0 c i k x || negb (eff s0 c i k x)) l);
        reflexivity.
Qed.

Lemma existsb_same_set {A} (f : A -> bool) l1 l2 :
  (forall x, In x l1 <-> In x l2) -> existsb f l1 = existsb f l2.
Proof.
  intro H. destruct (existsb f l1) eqn:E1, (existsb f l2) eqn:E2; try reflexivity.
  - apply existsb_exists in E1 as [x [Hx Hf]]. apply H in Hx.
    assert (existsb f l2 = true) by (apply existsb_exists; eauto). congruence.
  - apply existsb_exists in E2 as [x [Hx Hf]]. apply H in Hx.
    assert (existsb f l1 = true) by (apply existsb_exists; eauto). congruence.
Qed.

Lemma forallb_same_set {A} (f : A -> bool) l1 l2 :
  (forall x, In x l1 <-> In x l2) -> forallb f l1 = forallb f l2.
Proof.
  intro H. destruct (forallb f l1) eqn:E1, (forallb f l2) eqn:E2; try reflexivity.
  - rewrite forallb_forall in E1. assert (forallb f l2 = true); [|congruence].
    apply forallb_forall. intros x Hx. apply E1, H, Hx.
  - rewrite forallb_forall in E2. assert (forallb f l1 = true); [|congruence].
    apply forallb_forall. intros x Hx. apply E2, H, Hx.
Qed.

(** Joining the same set of states, in any order and with any repetitions, gives equal
    states. *)
Theorem fold_joined_same_set G s l1 l2 :
  Good G s -> (forall y, In y l1 -> Good G y) -> (forall y, In y l2 -> Good G y) ->
  (forall y, In y l1 <-> In y l2) ->
  state_eq (fold_left joined l1 s) (fold_left joined l2 s).
Proof.
  intros Hs H1 H2 Hset.
  destruct (fold_char G l1 s Hs H1) as [G1 [C1 [S1 K1]]].
  destruct (fold_char G l2 s Hs H2) as [G2 [C2 [S2 K2]]].
  assert (Hset' : forall y, In y (s :: l1) <-> In y (s :: l2)).
  { intro y. cbn. pose proof (Hset y). tauto. }
  split.
  - intro x. rewrite C1, C2. apply existsb_same_set. exact Hset'.
  - intros c i k. split.
    + apply (ordered_lookup_ext dot); [apply (proj1 G1 c i k) | apply (proj1 G2 c i k) |].
      intro x.
      change (lookup dot (entries (slot_at (fold_left joined l1 s) c i k)) x =
              lookup dot (entries (slot_at (fold_left joined l2 s) c i k)) x).
      assert (Hh : has (fold_left joined l1 s) c i k x = has (fold_left joined l2 s) c i k x).
      { rewrite K1, K2. unfold big_has. rewrite (existsb_same_set _ _ _ Hset'), (forallb_same_set _ _ _ Hset').
        reflexivity. }
      unfold has in Hh.
      destruct (lookup dot (entries (slot_at (fold_left joined l1 s) c i k)) x) as [e1|] eqn:L1;
      destruct (lookup dot (entries (slot_at (fold_left joined l2 s) c i k)) x) as [e2|] eqn:L2;
        try discriminate; [|reflexivity].
      apply (Good_lookup G) in L1; [|exact G1]. apply (Good_lookup G) in L2; [|exact G2]. congruence.
    + intro x. change (scope (slot_at (fold_left joined l1 s) c i k) x =
                       scope (slot_at (fold_left joined l2 s) c i k) x).
      rewrite S1, S2. unfold big_scope, big_ctx.
      rewrite (existsb_same_set _ _ _ Hset'), (existsb_same_set (fun s0 => context s0 x) _ _ Hset').
      reflexivity.
Qed.

(** ** Replicas built by applying deltas *)

(** What a replica's history is: deltas applied with [StoreState.apply] (every branch),
    and its own sealed writes, which leave it equal to its previous state joined with
    the sealed delta's state ([Replica.seal_is_join]). *)
Inductive Run : list Delta -> StoreState -> Prop :=
| RunEmpty : Run [] emptyState
| RunApply L s d s' : Run L s -> apply_step s d s' -> Run (L ++ [d]) s'
| RunSeal L s d s' : Run L s -> state_eq s' (joined s (delta_state d)) -> Run (L ++ [d]) s'.

(** The deltas a store can see: valid, drawing their entries from one oracle, and no
    two of them covering the same own dot (an origin seals each of its writes once). *)
Record delta_universe (G : Oracle) (D : list Delta) : Prop := {
  du_valid : forall d, In d D -> delta_valid d;
  du_agrees : forall d, In d D -> agrees G (delta_state d);
  du_unique : forall d1 d2 x, In d1 D -> In d2 D ->
              ownContext d1 x = true -> ownContext d2 x = true -> d1 = d2
}.

Definition fold_deltas (L : list Delta) : StoreState :=
  fold_left joined (map delta_state L) emptyState.

Lemma positive_ext a b : state_eq a b -> positive a -> positive b.
Proof.
  intros [_ H] Ha c i k e He. destruct (H c i k) as [E _].
  change (entries (slot_at a c i k) = entries (slot_at b c i k)) in E.
  rewrite <- E in He. apply (Ha c i k e He).
Qed.

Lemma positive_joined a b : positive a -> positive b -> positive (joined a b).
Proof.
  intros Ha Hb c i k e He. rewrite slot_at_joined in He. unfold joinSlots in He; cbn [entries] in He.
  apply dotstore_join_incl in He as [He|He]; [apply (Ha c i k e He) | apply (Hb c i k e He)].
Qed.

Lemma delta_state_positive d : delta_valid d -> positive (delta_state d).
Proof.
  intros Hv c i k e He. rewrite delta_state_slot in He.
  destruct (carried d c i k) eqn:E; [|destruct He]. apply (dv_positive d Hv c i k l e E He).
Qed.

Lemma emptyState_Good G : Good G emptyState.
Proof. split; [apply emptyState_wf | intros c i k e []]. Qed.

Lemma fold_deltas_app L d : fold_deltas (L ++ [d]) = joined (fold_deltas L) (delta_state d).
Proof. unfold fold_deltas. rewrite map_app, fold_left_app. reflexivity. Qed.

Lemma fold_deltas_props G D L :
  delta_universe G D -> incl L D -> Good G (fold_deltas L) /\ positive (fold_deltas L) /\
  forall x, context (fold_deltas L) x = true -> exists d, In d L /\ ownContext d x = true.
Proof.
  intros Hu. induction L as [|d L IH] using rev_ind; intro Hincl.
  - split; [apply emptyState_Good|]. split; [intros c i k e []|]. intros x H; discriminate.
  - assert (Hd : In d D) by (apply Hincl, in_or_app; right; left; reflexivity).
    destruct IH as [HG [Hp Hc]]; [intros z Hz; apply Hincl, in_or_app; left; exact Hz|].
    rewrite fold_deltas_app.
    split; [apply joined_Good; [exact HG | split; [apply delta_state_wf, (du_valid _ _ Hu d Hd) | apply (du_agrees _ _ Hu d Hd)]]|].
    split; [apply positive_joined; [exact Hp | apply delta_state_positive, (du_valid _ _ Hu d Hd)]|].
    intros x Hx. cbn [joined context] in Hx. unfold ctx_union in Hx. apply orb_true_iff in Hx as [Hx|Hx].
    + destruct (Hc x Hx) as [d' [H1 H2]]. exists d'. split; [apply in_or_app; left|]; assumption.
    + exists d. split; [apply in_or_app; right; left; reflexivity | exact Hx].
Qed.

(** Every replica state is the join of the deltas it applied. *)
Theorem run_is_fold G D L s :
  delta_universe G D -> incl L D -> Run L s -> state_eq s (fold_deltas L).
Proof.
  intros Hu Hincl Hrun. induction Hrun as [|L s d s' Hrun IH Hstep|L s d s' Hrun IH Heq].
  - apply state_eq_refl.
  - assert (Hd : In d D) by (apply Hincl, in_or_app; right; left; reflexivity).
    assert (HL : incl L D) by (intros z Hz; apply Hincl, in_or_app; left; exact Hz).
    specialize (IH HL). destruct (fold_deltas_props G D L Hu HL) as [[Hw _] [Hp Hc]].
    assert (Hv := du_valid _ _ Hu d Hd).
    rewrite fold_deltas_app.
    destruct Hstep as [Happ|Hna Hr Hg|Hna Hr Hg].
    + (* already applied: the delta is among those applied, so joining it changes nothing *)
      assert (Hx : context (fold_deltas L) (mkStamp (upTo d) (origin d)) = true).
      { destruct IH as [IHc _]. rewrite <- IHc. destruct Happ as [Z|Hall].
        - pose proof (dv_upTo d Hv). lia.
        - apply Hall. lia. }
      destruct (Hc _ Hx) as [d' [Hin' Hown']].
      assert (Hown : ownContext d (mkStamp (upTo d) (origin d)) = true).
      { apply ownContext_spec; cbn. split; [reflexivity|]. split; [|lia].
        apply ownRange_lo_le, (dv_upTo d Hv). }
      assert (d' = d) as ->.
      { apply (du_unique _ _ Hu d' d _ (HL _ Hin') Hd Hown' Hown). }
      eapply state_eq_trans; [exact IH|].
      rewrite <- fold_deltas_app. unfold fold_deltas.
      apply (fold_joined_same_set G); [apply emptyState_Good | | |].
      * intros y Hy. apply in_map_iff in Hy as [z [<- Hz]].
        split; [apply delta_state_wf, (du_valid _ _ Hu z), HL, Hz | apply (du_agrees _ _ Hu z), HL, Hz].
      * intros y Hy. apply in_map_iff in Hy as [z [<- Hz]].
        assert (Hz' : In z D) by (apply Hincl; exact Hz).
        split; [apply delta_state_wf, (du_valid _ _ Hu z Hz') | apply (du_agrees _ _ Hu z Hz')].
      * intro y. rewrite map_app, in_app_iff. cbn. split; [tauto|].
        intros [H|[<-|[]]]; [exact H | apply in_map; exact Hin'].
    + (* the fast path equals the join *)
      eapply state_eq_trans.
      * apply apply_fast_eq_join; try assumption.
        -- apply (state_wf_ext _ _ (state_eq_sym _ _ IH) Hw).
        -- apply (positive_ext _ _ (state_eq_sym _ _ IH) Hp).
      * apply joined_congr; [exact IH | apply state_eq_refl].
    + apply joined_congr; [exact IH | apply state_eq_refl].
  - assert (HL : incl L D) by (intros z Hz; apply Hincl, in_or_app; left; exact Hz).
    rewrite fold_deltas_app. eapply state_eq_trans; [exact Heq|].
    apply joined_congr; [apply IH, HL | apply state_eq_refl].
Qed.

(** ** Strong eventual consistency *)

Theorem strong_eventual_consistency G D L1 L2 s1 s2 :
  delta_universe G D -> incl L1 D -> incl L2 D ->
  (forall d, In d L1 <-> In d L2) ->
  Run L1 s1 -> Run L2 s2 -> state_eq s1 s2.
Proof.
  intros Hu H1 H2 Hset R1 R2.
  eapply state_eq_trans; [apply (run_is_fold G D L1 s1 Hu H1 R1)|].
  eapply state_eq_trans; [|apply state_eq_sym, (run_is_fold G D L2 s2 Hu H2 R2)].
  apply (fold_joined_same_set G); [apply emptyState_Good | | |].
  - intros y Hy. apply in_map_iff in Hy as [z [<- Hz]].
    split; [apply delta_state_wf, (du_valid _ _ Hu z), H1, Hz | apply (du_agrees _ _ Hu z), H1, Hz].
  - intros y Hy. apply in_map_iff in Hy as [z [<- Hz]].
    split; [apply delta_state_wf, (du_valid _ _ Hu z), H2, Hz | apply (du_agrees _ _ Hu z), H2, Hz].
  - intro y. rewrite !in_map_iff. split; intros [z [E Hz]]; exists z; split; try assumption; apply Hset; assumption.
Qed.
