(** * Rules.v — the merge rules of docs/ARCHITECTURE.md §2 on the store.

    Every scenario starts from replicas that have just sealed ([sealed_replica]); each
    performs one of the [Replica] mutations ([put], [delete], [add], [remove], [create],
    [setFile], ...) with a dot from its own clock, seals the result into a delta
    ([sealed_delta]), and the deltas are applied with [apply_step] (every branch of
    [StoreState.apply]).  Every mutation is taken at an arbitrary physical time; only
    the claim that a new stamp exceeds everything its writer had seen needs a time whose
    lead the writer's clock follows ([within_lead]).  The register- and set-level forms
    of rules 1, 2, 3 and 6 are in [CausalRegister.v] and [ORSet.v]. *)

From Coq Require Import Arith Lia Bool List String.
From Concord Require Import Stamp Context DotStore Values StoreState Delta Replica.
Import ListNotations.

(** ** Joins, one entry at a time *)

Lemma lookup_joined a b c i k x :
  state_wf a -> state_wf b ->
  lookup dot (entries (slot_at (joined a b) c i k)) x =
  join_at (lookup dot (entries (slot_at a c i k)) x) (seenBy (context a) (slot_at a c i k) x)
          (lookup dot (entries (slot_at b c i k)) x) (seenBy (context b) (slot_at b c i k) x).
Proof.
  intros Ha Hb. rewrite slot_at_joined. unfold joinSlots; cbn [entries].
  apply lookup_dotstore_join; [apply (Ha c i k) | apply (Hb c i k)].
Qed.

Lemma in_joined_iff a b c i k e :
  state_wf a -> state_wf b ->
  (In e (entries (slot_at (joined a b) c i k)) <->
   lookup dot (entries (slot_at (joined a b) c i k)) (dot e) = Some e).
Proof.
  intros Ha Hb. apply in_lookup_ordered. rewrite slot_at_joined.
  apply dotstore_join_ordered; [apply (Ha c i k) | apply (Hb c i k)].
Qed.

Lemma wf_in_lookup s c i k e :
  state_wf s -> In e (entries (slot_at s c i k)) -> lookup dot (entries (slot_at s c i k)) (dot e) = Some e.
Proof. intros Hs He. apply lookup_ordered_in; [apply (Hs c i k) | assumption]. Qed.

Lemma wf_lookup_seen s c i k x y :
  state_wf s -> lookup dot (entries (slot_at s c i k)) x = Some y ->
  seenBy (context s) (slot_at s c i k) x = true.
Proof.
  intros Hs H. apply lookup_some in H as [<- H]. destruct (Hs c i k) as [_ [Hseen _]]. apply Hseen. exact H.
Qed.

(** An entry one side holds survives when the other side has not seen it. *)
Lemma in_joined_left a b c i k e :
  state_wf a -> state_wf b -> In e (entries (slot_at a c i k)) ->
  seenBy (context b) (slot_at b c i k) (dot e) = false ->
  In e (entries (slot_at (joined a b) c i k)).
Proof.
  intros Ha Hb He Hs. apply in_joined_iff; [assumption|assumption|].
  rewrite lookup_joined, (wf_in_lookup a) by assumption.
  destruct (lookup dot (entries (slot_at b c i k)) (dot e)); cbn; [reflexivity|]. rewrite Hs. reflexivity.
Qed.

Lemma in_joined_right a b c i k e :
  state_wf a -> state_wf b -> In e (entries (slot_at b c i k)) ->
  seenBy (context a) (slot_at a c i k) (dot e) = false ->
  In e (entries (slot_at (joined a b) c i k)).
Proof.
  intros Ha Hb He Hs. apply in_joined_iff; [assumption|assumption|].
  rewrite lookup_joined, (wf_in_lookup b) by assumption.
  destruct (lookup dot (entries (slot_at a c i k)) (dot e)) eqn:E.
  - apply (wf_lookup_seen a) in E; [congruence|assumption].
  - cbn. rewrite Hs. reflexivity.
Qed.

(** An entry of a join came from a side, and the other side had either not seen it or
    held it too. *)
Lemma in_joined_inv a b c i k e :
  state_wf a -> state_wf b -> In e (entries (slot_at (joined a b) c i k)) ->
  (In e (entries (slot_at a c i k)) /\
   (seenBy (context b) (slot_at b c i k) (dot e) = false \/
    exists e', lookup dot (entries (slot_at b c i k)) (dot e) = Some e')) \/
  (In e (entries (slot_at b c i k)) /\ seenBy (context a) (slot_at a c i k) (dot e) = false).
Proof.
  intros Ha Hb He. apply in_joined_iff in He; [|assumption|assumption].
  rewrite lookup_joined in He by assumption.
  destruct (lookup dot (entries (slot_at a c i k)) (dot e)) as [x|] eqn:La;
  destruct (lookup dot (entries (slot_at b c i k)) (dot e)) as [y|] eqn:Lb; cbn in He.
  - inversion He; subst. left. split; [apply lookup_some in La; tauto | right; eauto].
  - destruct (seenBy _ _ (dot e)) eqn:S; [discriminate|]. inversion He; subst.
    left. split; [apply lookup_some in La; tauto | left; reflexivity].
  - destruct (seenBy (context a) _ (dot e)) eqn:S; [discriminate|]. inversion He; subst.
    right. split; [apply lookup_some in Lb; tauto | reflexivity].
  - discriminate.
Qed.

(** ** Replicas pending over a sealed state *)

Lemma pending_wf s0 V u r : sealed_base s0 V -> Pending s0 V u r -> state_wf (rep_state r).
Proof.
  intros Hb Hp c i k. split; [|split].
  - apply (pd_ordered _ _ _ _ Hp).
  - intros e He. unfold seenBy. change (slots (collections (rep_state r) c i) k)
      with (slot_at (rep_state r) c i k) in *.
    rewrite (pending_entries_ctx s0 V u r c i k e Hb Hp He). reflexivity.
  - intros d Hd. change (slots (collections (rep_state r) c i) k) with (slot_at (rep_state r) c i k) in Hd.
    rewrite (pd_noscopes _ _ _ _ Hp c i k d) in Hd. discriminate.
Qed.

Lemma pending_positive s0 V u r : sealed_base s0 V -> Pending s0 V u r -> positive (rep_state r).
Proof.
  intros Hb Hp c i k e He. destruct (pd_entries _ _ _ _ Hp c i k e He) as [H|[_ [H _]]].
  - apply (sb_pos _ _ Hb c i k e H).
  - lia.
Qed.

Lemma sealed_delta_slot r V u seq c i k :
  slot_at (delta_state (sealed_delta r V u seq)) c i k =
  if rep_outbox r c i k
  then mkSlot (entries (slot_at (rep_state r) c i k))
              (ctx_subtracting (ctx_of_vv (observed (sealed_delta r V u seq)))
                               (ownContext (sealed_delta r V u seq)))
  else emptySlot.
Proof.
  rewrite delta_state_slot. unfold carried, sealed_delta at 1, makeDelta at 1; cbn [records whole].
  destruct (rep_outbox r c i k); reflexivity.
Qed.

(** A dot of another replica that the sealed state had not seen is unseen by the delta
    of a local write ... *)
Lemma sealed_delta_unseen s0 V u r seq c i k x :
  Pending s0 V u r -> replica x <> rep_id r -> ctx_of_vv V x = false ->
  seenBy (context (delta_state (sealed_delta r V u seq)))
         (slot_at (delta_state (sealed_delta r V u seq)) c i k) x = false.
Proof.
  intros Hp Hr Hx. rewrite delta_state_context, sealed_delta_slot. unfold seenBy.
  assert (Ho : ownContext (sealed_delta r V u seq) x = false).
  { destruct (ownContext _ x) eqn:E; [|reflexivity]. apply ownContext_spec in E as [E _].
    cbn in E. contradiction. }
  rewrite Ho. destruct (rep_outbox r c i k); [|reflexivity]. cbn [scope orb].
  unfold ctx_subtracting. rewrite Ho, andb_true_r. unfold ctx_of_vv in *.
  rewrite seal_observed. unfold vv_set.
  destruct (Nat.eqb_spec (replica x) (rep_id r)); [contradiction|]. exact Hx.
Qed.

(** ... and by the writer's own state. *)
Lemma pending_unseen s0 V u r c i k x :
  Pending s0 V u r -> replica x <> rep_id r -> ctx_of_vv V x = false ->
  seenBy (context (rep_state r)) (slot_at (rep_state r) c i k) x = false.
Proof.
  intros Hp Hr Hx. unfold seenBy. rewrite (pd_ctx _ _ _ _ Hp x), (pd_noscopes _ _ _ _ Hp c i k x).
  unfold ctx_of_vv, vv_set in *. destruct (Nat.eqb_spec (replica x) (rep_id r)); [contradiction|].
  rewrite Hx. reflexivity.
Qed.

(** The sealed state holds only dots within [V]. *)
Lemma base_entry_in_V s0 V c i k e :
  sealed_base s0 V -> In e (entries (slot_at s0 c i k)) -> ctx_of_vv V (dot e) = true.
Proof.
  intros Hb He. destruct (sb_wf _ _ Hb c i k) as [_ [Hs _]]. specialize (Hs e He).
  unfold seenBy in Hs. change (slots (collections s0 c i) k) with (slot_at s0 c i k) in Hs.
  rewrite (sb_noscopes _ _ Hb c i k (dot e)), orb_false_r, (sb_ctx _ _ Hb) in Hs. exact Hs.
Qed.

(** A new dot of the writer is outside [V]. *)
Lemma new_dot_not_in_V V id x : replica x = id -> V id < hlc x -> ctx_of_vv V x = false.
Proof.
  intros H1 H2. unfold ctx_of_vv. rewrite H1. destruct (Nat.leb_spec (hlc x) (V id)); [lia|].
  apply andb_false_r.
Qed.

(** ** Two concurrent writers from one sealed state *)

Section Exchange.
  Variables (s0 : StoreState) (V : VersionVector) (uA uB seqA seqB : nat) (rA rB : Replica).
  Hypothesis Hb : sealed_base s0 V.
  Hypothesis HpA : Pending s0 V uA rA.
  Hypothesis HpB : Pending s0 V uB rB.
  Hypothesis Hne : rep_id rA <> rep_id rB.
  Hypothesis HuA : V (rep_id rA) < uA.
  Hypothesis HuB : V (rep_id rB) < uB.

  Let dA := sealed_delta rA V uA seqA.
  Let dB := sealed_delta rB V uB seqB.

  Lemma exchange_compatible : compatible (delta_state dA) (delta_state dB).
  Proof.
    intros c i k x y Hx Hy Hd.
    unfold dA, dB in *. rewrite sealed_delta_slot in Hx, Hy.
    destruct (rep_outbox rA c i k); [|destruct Hx]. destruct (rep_outbox rB c i k); [|destruct Hy].
    cbn [entries] in Hx, Hy.
    destruct (pd_entries _ _ _ _ HpA c i k x Hx) as [Ix|[Nx1 [Nx2 _]]];
    destruct (pd_entries _ _ _ _ HpB c i k y Hy) as [Iy|[Ny1 [Ny2 _]]].
    - apply (wf_in_lookup s0) in Ix; [|apply (sb_wf _ _ Hb)].
      apply (wf_in_lookup s0) in Iy; [|apply (sb_wf _ _ Hb)]. congruence.
    - exfalso. pose proof (base_entry_in_V s0 V c i k x Hb Ix) as H. rewrite Hd in H.
      rewrite (new_dot_not_in_V V (rep_id rB) (dot y)) in H by assumption. discriminate.
    - exfalso. pose proof (base_entry_in_V s0 V c i k y Hb Iy) as H. rewrite <- Hd in H.
      rewrite (new_dot_not_in_V V (rep_id rA) (dot x)) in H by assumption. discriminate.
    - exfalso. apply Hne. congruence.
  Qed.

  Lemma exchange_not_applied : ~ hasApplied (rep_state rA) dB.
  Proof.
    intro H. unfold hasApplied, dB, sealed_delta, makeDelta in H; cbn [origin upTo] in H.
    apply (covers_ext _ _ _ _ (pd_ctx _ _ _ _ HpA)) in H. apply covers_vv_le in H.
    rewrite vv_set_other in H by (intro E; apply Hne; symmetry; exact E). lia.
  Qed.

  Theorem exchange tA tB :
    apply_step (rep_state rA) dB tA -> apply_step (rep_state rB) dA tB ->
    state_eq tA tB /\ state_eq tB (joined (rep_state rB) (delta_state dA)) /\
    state_eq tA (joined (rep_state rA) (delta_state dB)).
  Proof.
    intros HA HB.
    assert (HvA : delta_valid dA) by (apply (sealed_delta_valid s0); assumption).
    assert (HvB : delta_valid dB) by (apply (sealed_delta_valid s0); assumption).
    assert (HwA := delta_state_wf dA HvA). assert (HwB := delta_state_wf dB HvB).
    assert (Hw0 := sb_wf _ _ Hb).
    assert (HtA : state_eq tA (joined (rep_state rA) (delta_state dB))).
    { apply (apply_eq_join _ _ _ (pending_wf s0 V uA rA Hb HpA) (pending_positive s0 V uA rA Hb HpA) HvB);
        [apply exchange_not_applied | exact HA]. }
    assert (HtB : state_eq tB (joined (rep_state rB) (delta_state dA))).
    { apply (apply_eq_join _ _ _ (pending_wf s0 V uB rB Hb HpB) (pending_positive s0 V uB rB Hb HpB) HvA).
      - clear HA HB HtA. intro H. unfold hasApplied, dA, sealed_delta, makeDelta in H; cbn [origin upTo] in H.
        apply (covers_ext _ _ _ _ (pd_ctx _ _ _ _ HpB)) in H. apply covers_vv_le in H.
        rewrite vv_set_other in H by exact Hne. lia.
      - exact HB. }
    assert (HsA : state_eq (rep_state rA) (joined s0 (delta_state dA))) by (apply seal_is_join; assumption).
    assert (HsB : state_eq (rep_state rB) (joined s0 (delta_state dB))) by (apply seal_is_join; assumption).
    split; [|split; assumption].
    eapply state_eq_trans; [exact HtA|].
    eapply state_eq_trans; [apply joined_congr; [exact HsA | apply state_eq_refl]|].
    eapply state_eq_trans; [apply joined_assoc; assumption|].
    eapply state_eq_trans;
      [apply joined_congr; [apply state_eq_refl | apply joined_comm; try assumption;
                                                  apply exchange_compatible]|].
    eapply state_eq_trans; [apply state_eq_sym, joined_assoc; assumption|].
    eapply state_eq_trans; [apply joined_congr; [apply state_eq_sym, HsB | apply state_eq_refl]|].
    apply state_eq_sym. exact HtB.
  Qed.
End Exchange.

(** ** Scenario set-up *)

(** Two replicas with different ids that have just sealed the same state. *)
Definition concurrent_pair (rA rB : Replica) (V : VersionVector) : Prop :=
  sealed_replica rA V /\ sealed_replica rB V /\ rep_state rA = rep_state rB /\ rep_id rA <> rep_id rB.

Lemma op_pending_exchange rA rB V rA' da rB' db seqA seqB tA tB :
  concurrent_pair rA rB V -> op_result rA V rA' da -> op_result rB V rB' db ->
  apply_step (rep_state rA') (sealed_delta rB' V (hlc db) seqB) tA ->
  apply_step (rep_state rB') (sealed_delta rA' V (hlc da) seqA) tB ->
  state_eq tA tB /\ state_eq tB (joined (rep_state rB') (delta_state (sealed_delta rA' V (hlc da) seqA))).
Proof.
  intros [HsA [HsB [Hst Hne]]] [HpA [_ [HuA [_ HidA]]]] [HpB [_ [HuB [_ HidB]]]] HA HB.
  rewrite Hst in HpA.
  assert (Hne' : rep_id rA' <> rep_id rB') by congruence.
  rewrite <- HidA in HuA. rewrite <- HidB in HuB.
  destruct (exchange (rep_state rB) V (hlc da) (hlc db) seqA seqB rA' rB' (sr_base _ _ HsB) HpA HpB
              Hne' HuA HuB tA tB HA HB) as [H1 [H2 _]].
  split; assumption.
Qed.

(** ** Rule 3: a set add wins over a concurrent remove *)

Theorem rule3_store_add_wins_over_concurrent_remove rA rB V ref name x nowA nowB seqA seqB
    rA' da rB' db tA tB :
  concurrent_pair rA rB V ->
  remove rA ref name x nowA = Some (rA', da) ->
  add rB ref name x nowB = Some (rB', db) ->
  apply_step (rep_state rA') (sealed_delta rB' V (hlc db) seqB) tA ->
  apply_step (rep_state rB') (sealed_delta rA' V (hlc da) seqA) tB ->
  state_eq tA tB /\
  In (mkEntry db Marker) (entries (slot_at tA (ref_collection ref) (ref_id ref) (Element name x))).
Proof.
  intros Hpair EA EB HA HB. pose proof Hpair as [HsA [HsB [Hst Hne]]].
  pose proof (remove_result V rA ref name x nowA rA' da HsA EA) as ResA.
  pose proof (add_result V rB ref name x nowB rB' db HsB EB) as ResB.
  pose proof (add_element rB ref name x nowB rB' db EB) as Fel.
  destruct (op_pending_exchange rA rB V rA' da rB' db seqA seqB tA tB Hpair ResA ResB HA HB) as [Heq HtB].
  split; [assumption|].
  destruct ResA as [HpA [HrA [HuA [_ HidA]]]]. destruct ResB as [HpB [HrB [HuB [HltB HidB]]]].
  rewrite Hst in HpA.
  destruct Heq as [_ Heq]. destruct (Heq (ref_collection ref) (ref_id ref) (Element name x)) as [E _].
  change (entries (slot_at tA (ref_collection ref) (ref_id ref) (Element name x)) =
          entries (slot_at tB (ref_collection ref) (ref_id ref) (Element name x))) in E.
  rewrite E. destruct HtB as [_ HtB]. destruct (HtB (ref_collection ref) (ref_id ref) (Element name x)) as [E' _].
  change (entries (slot_at tB (ref_collection ref) (ref_id ref) (Element name x)) =
          entries (slot_at (joined (rep_state rB') (delta_state (sealed_delta rA' V (hlc da) seqA)))
                           (ref_collection ref) (ref_id ref) (Element name x))) in E'.
  rewrite E'. apply in_joined_left.
  - apply (pending_wf (rep_state rB) V (hlc db)); [apply (sr_base _ _ HsB) | exact HpB].
  - apply delta_state_wf, (sealed_delta_valid (rep_state rB));
      [apply (sr_base _ _ HsB) | exact HpA | rewrite HidA; exact HuA].
  - rewrite Fel. left; reflexivity.
  - apply (sealed_delta_unseen (rep_state rB) V); [exact HpA | cbn [dot] | cbn [dot]].
    + rewrite HrB, HidA. intro E2; apply Hne; symmetry; exact E2.
    + apply (new_dot_not_in_V V (rep_id rB)); assumption.
Qed.

(** ** Reading a record *)

Definition nonempty {A} (l : list A) : bool := match l with [] => false | _ => true end.

Lemma nonempty_in {A} (l : list A) x : In x l -> nonempty l = true.
Proof. destruct l; [intros []|reflexivity]. Qed.

Lemma state_eq_entries a b c i k :
  state_eq a b -> entries (slot_at a c i k) = entries (slot_at b c i k).
Proof. intros [_ H]. apply (H c i k). Qed.

Lemma state_eq_slot a b c i k : state_eq a b -> slot_eq (slot_at a c i k) (slot_at b c i k).
Proof. intros [_ H]. apply (H c i k). Qed.

(** [Conflict] of kind [fileFork]: the field holds versions of more than one content. *)
Definition fileFork (rec : StoreRecord) (name : string) : bool :=
  let versions := fileVersions rec name in
  existsb (fun v => existsb (fun w => negb (hash_eqb (hash (snd v)) (hash (snd w)))) versions) versions.

Lemma fileVersions_in rec name e f :
  In e (entries (slots rec (Field name))) -> payload e = PFile f -> In (dot e, f) (fileVersions rec name).
Proof.
  intros He Hp. unfold fileVersions. apply in_flat_map. exists e. split; [assumption|].
  rewrite Hp. left; reflexivity.
Qed.

Lemma fileFork_of_two rec name d1 f1 d2 f2 :
  In (mkEntry d1 (PFile f1)) (entries (slots rec (Field name))) ->
  In (mkEntry d2 (PFile f2)) (entries (slots rec (Field name))) ->
  hash f1 <> hash f2 -> fileFork rec name = true.
Proof.
  intros H1 H2 Hh. unfold fileFork. apply existsb_exists. exists (d1, f1). split.
  - apply (fileVersions_in rec name (mkEntry d1 (PFile f1))); [assumption|reflexivity].
  - apply existsb_exists. exists (d2, f2). split.
    + apply (fileVersions_in rec name (mkEntry d2 (PFile f2))); [assumption|reflexivity].
    + cbn. unfold hash_eqb. destruct (ContentHash_eq_dec (hash f1) (hash f2)); [contradiction|reflexivity].
Qed.

(** The value read from a scalar or file field: the entry with the greatest stamp, i.e.
    the last of the sorted entries ([Record.fields]). *)
Definition fieldPayload (rec : StoreRecord) (name : string) : option Payload :=
  match rev (entries (slots rec (Field name))) with [] => None | e :: _ => Some (payload e) end.

(** ** Rule 4: a delete concurrent with an update keeps the record with all its fields *)

Theorem rule4_delete_concurrent_with_update_keeps_record rA rB V ref fields nowA nowB seqA seqB
    rA' da rB' db tA tB :
  concurrent_pair rA rB V ->
  delete rA ref nowA = Some (rA', da) ->
  put rB ref fields nowB = Some (rB', db) ->
  apply_step (rep_state rA') (sealed_delta rB' V (hlc db) seqB) tA ->
  apply_step (rep_state rB') (sealed_delta rA' V (hlc da) seqA) tB ->
  state_eq tA tB /\
  isVisible (record tA ref) = true /\
  hasDeleteUpdateConflict (record tA ref) = true /\
  (forall k, field_key k = true ->
     slot_eq (slot_at tA (ref_collection ref) (ref_id ref) k)
             (slot_at (rep_state rB') (ref_collection ref) (ref_id ref) k)).
Proof.
  intros Hpair EA EB HA HB. pose proof Hpair as [HsA [HsB [Hst Hne]]].
  pose proof (delete_result V rA ref nowA rA' da HsA EA) as ResA.
  pose proof (put_result V rB ref fields nowB rB' db HsB EB) as ResB.
  pose proof (put_liveness rB ref fields nowB rB' db EB) as Flive.
  pose proof (delete_tombstone rA ref nowA rA' da EA) as Ftomb.
  pose proof (fun c i k => delete_outbox rA ref nowA rA' da c i k EA) as Fout.
  destruct (op_pending_exchange rA rB V rA' da rB' db seqA seqB tA tB Hpair ResA ResB HA HB) as [Heq HtB].
  destruct ResA as [HpA [HrA [HuA [_ HidA]]]]. destruct ResB as [HpB [HrB [HuB [HltB HidB]]]].
  rewrite Hst in HpA. set (s0 := rep_state rB) in *. set (dA := sealed_delta rA' V (hlc da) seqA) in *.
  assert (Hb : sealed_base s0 V) by apply (sr_base _ _ HsB).
  assert (HwB : state_wf (rep_state rB')) by (apply (pending_wf s0 V (hlc db)); assumption).
  assert (HwA : state_wf (delta_state dA)).
  { apply delta_state_wf, (sealed_delta_valid s0); [exact Hb | exact HpA | rewrite HidA; exact HuA]. }
  assert (HtA : state_eq tA (joined (rep_state rB') (delta_state dA))) by (eapply state_eq_trans; eassumption).
  set (c := ref_collection ref). set (i := ref_id ref).
  (* the updater's liveness dot survives *)
  assert (Hlive : In (mkEntry db Marker) (entries (slot_at tA c i Liveness))).
  { rewrite (state_eq_entries _ _ c i Liveness HtA). apply in_joined_left; try assumption.
    apply (sealed_delta_unseen s0 V); [exact HpA | cbn [dot] | cbn [dot]].
    - rewrite HrB, HidA. intro E2; apply Hne; symmetry; exact E2.
    - apply (new_dot_not_in_V V (rep_id rB)); assumption. }
  (* the delete's tombstone survives *)
  assert (Htomb : In (mkEntry da Marker) (entries (slot_at tA c i Tombstones))).
  { rewrite (state_eq_entries _ _ c i Tombstones HtA). apply in_joined_right; try assumption.
    - unfold dA. rewrite sealed_delta_slot, Fout, at_slot_refl, !orb_true_r. cbn [entries].
      unfold c, i. rewrite Ftomb. left; reflexivity.
    - apply (pending_unseen s0 V (hlc db)); [exact HpB | cbn [dot] | cbn [dot]].
      + rewrite HrA, HidB. exact Hne.
      + apply (new_dot_not_in_V V (rep_id rA)); assumption. }
  split; [exact Heq|]. split; [|split].
  - change (nonempty (entries (slot_at tA c i Liveness)) = true). apply (nonempty_in _ _ Hlive).
  - change (nonempty (entries (slot_at tA c i Liveness)) &&
            nonempty (entries (slot_at tA c i Tombstones)) = true).
    rewrite (nonempty_in _ _ Hlive). apply (nonempty_in _ _ Htomb).
  - intros k Hk. eapply slot_eq_trans; [apply state_eq_slot, HtA|].
    assert (Hnb : rep_outbox rA' c i k = false).
    { rewrite Fout, (sr_outbox _ _ HsA). unfold at_slot.
      destruct k; try discriminate; rewrite !(andb_comm (is_ref ref c i)); reflexivity. }
    rewrite slot_at_joined. unfold dA. rewrite sealed_delta_slot, Hnb. fold dA.
    split; cbn [joinSlots entries scope emptySlot].
    + rewrite dotstore_join_merge, merge_nil_r. apply filter_all.
      intros e He. unfold seenBy; cbn [scope ctx_empty]. rewrite orb_false_r, delta_state_context.
      destruct (pd_entries _ _ _ _ HpB c i k e He) as [I|[N1 _]].
      * destruct (seal_s0_entry s0 V (hlc da) seqA rA' Hb HpA ltac:(rewrite HidA; exact HuA) c i k e I)
          as [_ [Ho _]]. fold dA in Ho. rewrite Ho. reflexivity.
      * destruct (ownContext dA (dot e)) eqn:Eo; [|reflexivity].
        apply ownContext_spec in Eo as [Eo _]. unfold dA, sealed_delta, makeDelta in Eo; cbn [origin] in Eo.
        exfalso. apply Hne. rewrite <- HidA, <- HidB, <- Eo, N1. reflexivity.
    + intro x. unfold ctx_subtracting, ctx_union. rewrite (pd_noscopes _ _ _ _ HpB c i k x).
      reflexivity.
Qed.

(** ** Rule 6: concurrent writes of different content fork; every version is kept *)

Theorem rule6_store_concurrent_file_writes_fork rA rB V ref name f1 f2 nowA nowB seqA seqB
    rA' da rB' db tA tB :
  concurrent_pair rA rB V ->
  setFile rA ref name f1 nowA = Some (rA', da) ->
  setFile rB ref name f2 nowB = Some (rB', db) ->
  apply_step (rep_state rA') (sealed_delta rB' V (hlc db) seqB) tA ->
  apply_step (rep_state rB') (sealed_delta rA' V (hlc da) seqA) tB ->
  state_eq tA tB /\
  In (mkEntry da (PFile f1)) (entries (slot_at tA (ref_collection ref) (ref_id ref) (Field name))) /\
  In (mkEntry db (PFile f2)) (entries (slot_at tA (ref_collection ref) (ref_id ref) (Field name))) /\
  (hash f1 <> hash f2 -> fileFork (record tA ref) name = true).
Proof.
  intros Hpair EA EB HA HB. pose proof Hpair as [HsA [HsB [Hst Hne]]].
  pose proof (put_result V rA ref [(name, FWFile f1)] nowA rA' da HsA EA) as ResA.
  pose proof (put_result V rB ref [(name, FWFile f2)] nowB rB' db HsB EB) as ResB.
  pose proof (setFile_field rA ref name f1 nowA rA' da EA) as [FA OA].
  pose proof (setFile_field rB ref name f2 nowB rB' db EB) as [FB _].
  destruct (op_pending_exchange rA rB V rA' da rB' db seqA seqB tA tB Hpair ResA ResB HA HB) as [Heq HtB].
  destruct ResA as [HpA [HrA [HuA [_ HidA]]]]. destruct ResB as [HpB [HrB [HuB [HltB HidB]]]].
  rewrite Hst in HpA. set (s0 := rep_state rB) in *. set (dA := sealed_delta rA' V (hlc da) seqA) in *.
  assert (Hb : sealed_base s0 V) by apply (sr_base _ _ HsB).
  assert (HwB : state_wf (rep_state rB')) by (apply (pending_wf s0 V (hlc db)); assumption).
  assert (HwA : state_wf (delta_state dA)).
  { apply delta_state_wf, (sealed_delta_valid s0); [exact Hb | exact HpA | rewrite HidA; exact HuA]. }
  assert (HtA : state_eq tA (joined (rep_state rB') (delta_state dA))) by (eapply state_eq_trans; eassumption).
  assert (H1 : In (mkEntry da (PFile f1)) (entries (slot_at tA (ref_collection ref) (ref_id ref) (Field name)))).
  { rewrite (state_eq_entries _ _ _ _ _ HtA). apply in_joined_right; try assumption.
    - unfold dA. rewrite sealed_delta_slot, OA. cbn [entries]. rewrite FA. left; reflexivity.
    - apply (pending_unseen s0 V (hlc db)); [exact HpB | cbn [dot] | cbn [dot]].
      + rewrite HrA, HidB. exact Hne.
      + apply (new_dot_not_in_V V (rep_id rA)); assumption. }
  assert (H2 : In (mkEntry db (PFile f2)) (entries (slot_at tA (ref_collection ref) (ref_id ref) (Field name)))).
  { rewrite (state_eq_entries _ _ _ _ _ HtA). apply in_joined_left; try assumption.
    - rewrite FB. left; reflexivity.
    - apply (sealed_delta_unseen s0 V); [exact HpA | cbn [dot] | cbn [dot]].
      + rewrite HrB, HidA. intro E2; apply Hne; symmetry; exact E2.
      + apply (new_dot_not_in_V V (rep_id rB)); assumption. }
  split; [exact Heq|]. split; [exact H1|]. split; [exact H2|].
  intro Hh. apply (fileFork_of_two _ _ da f1 db f2); assumption.
Qed.

(** ** A later write replaces what its writer had observed *)

(** [w] brings nothing that [s0] had not seen. *)
Definition observed_by (w s0 : StoreState) : Prop :=
  forall c i k x, seenBy (context w) (slot_at w c i k) x = true -> context s0 x = true.

Section LaterWrite.
  Variables (s0 : StoreState) (V : VersionVector) (u seq : nat) (r : Replica).
  Hypothesis Hb : sealed_base s0 V.
  Hypothesis Hp : Pending s0 V u r.
  Hypothesis Hu : V (rep_id r) < u.

  Let delta := sealed_delta r V u seq.

  Lemma delta_sees_base c i k x :
    rep_outbox r c i k = true -> context s0 x = true ->
    seenBy (context (delta_state delta)) (slot_at (delta_state delta) c i k) x = true.
  Proof.
    intros Ho Hx. rewrite delta_state_context. unfold delta. rewrite sealed_delta_slot, Ho.
    fold delta. unfold seenBy, ctx_subtracting; cbn [scope].
    destruct (ownContext delta x); [reflexivity|]. cbn [orb negb]. rewrite andb_true_r.
    rewrite (sb_ctx _ _ Hb) in Hx. apply ctx_of_vv_spec in Hx. apply ctx_of_vv_spec.
    unfold delta. rewrite seal_observed. unfold vv_set.
    destruct (Nat.eqb_spec (replica x) (rep_id r)) as [E|E]; [rewrite E in Hx|]; lia.
  Qed.

  (** On any replica whatever else it holds ([w]), in a slot the write carried, an
      entry is the writer's (same dot) or one the writer had not seen. *)
  Lemma later_write_survivors w c i k e :
    state_wf w -> rep_outbox r c i k = true ->
    In e (entries (slot_at (joined (joined s0 w) (delta_state delta)) c i k)) ->
    (exists e', In e' (entries (slot_at (rep_state r) c i k)) /\ dot e' = dot e) \/
    context s0 (dot e) = false.
  Proof.
    intros Hw Ho He.
    assert (Hu0 : state_wf (joined s0 w)) by (apply joined_wf; [apply (sb_wf _ _ Hb) | assumption]).
    assert (Hd : state_wf (delta_state delta)) by (apply delta_state_wf, (sealed_delta_valid s0); assumption).
    destruct (in_joined_inv _ _ c i k e Hu0 Hd He) as [[_ [S|[e' L]]]|[I _]].
    - right. destruct (context s0 (dot e)) eqn:E; [|reflexivity].
      rewrite (delta_sees_base c i k (dot e) Ho E) in S. discriminate.
    - left. exists e'. apply lookup_some in L as [L1 L2]. unfold delta in L2.
      rewrite sealed_delta_slot, Ho in L2. split; assumption.
    - left. exists e. unfold delta in I. rewrite sealed_delta_slot, Ho in I. split; [exact I | reflexivity].
  Qed.

  (** If moreover [w] brings nothing the writer had not seen, the carried slot is exactly
      what the writer wrote. *)
  Lemma later_write_exact w c i k :
    state_wf w -> observed_by w s0 -> rep_outbox r c i k = true ->
    (forall e, In e (entries (slot_at (rep_state r) c i k)) -> context s0 (dot e) = false) ->
    entries (slot_at (joined (joined s0 w) (delta_state delta)) c i k) =
    entries (slot_at (rep_state r) c i k).
  Proof.
    intros Hw Hwo Ho Hnew.
    assert (Hw0 := sb_wf _ _ Hb).
    assert (Hu0 : state_wf (joined s0 w)) by (apply joined_wf; assumption).
    assert (Hd : state_wf (delta_state delta)) by (apply delta_state_wf, (sealed_delta_valid s0); assumption).
    apply (ordered_lookup_ext dot); [apply (joined_wf _ _ Hu0 Hd c i k) | apply (pd_ordered _ _ _ _ Hp) |].
    intro x. rewrite lookup_joined by assumption.
    assert (Hdx : lookup dot (entries (slot_at (delta_state delta) c i k)) x =
                  lookup dot (entries (slot_at (rep_state r) c i k)) x)
      by (unfold delta; rewrite sealed_delta_slot, Ho; reflexivity).
    rewrite Hdx.
    destruct (lookup dot (entries (slot_at (joined s0 w) c i k)) x) as [e|] eqn:L.
    - (* what [s0] or [w] hold there the writer had seen *)
      assert (Hx : context s0 x = true).
      { apply lookup_some in L as [<- L]. rewrite slot_at_joined in L. unfold joinSlots in L; cbn [entries] in L.
        apply dotstore_join_incl in L as [L|L].
        - destruct (Hw0 c i k) as [_ [S _]]. specialize (S e L). unfold seenBy in S.
          change (slots (collections s0 c i) k) with (slot_at s0 c i k) in S.
          rewrite (sb_noscopes _ _ Hb c i k (dot e)), orb_false_r in S. exact S.
        - apply (Hwo c i k). destruct (Hw c i k) as [_ [S _]]. apply S. exact L. }
      destruct (lookup dot (entries (slot_at (rep_state r) c i k)) x) as [e'|] eqn:L'.
      + exfalso. apply lookup_some in L' as [<- L']. rewrite Hnew in Hx by assumption. discriminate.
      + cbn [join_at]. rewrite (delta_sees_base c i k x Ho Hx). reflexivity.
    - destruct (lookup dot (entries (slot_at (rep_state r) c i k)) x) as [e'|] eqn:L'; [|reflexivity].
      cbn [join_at]. apply lookup_some in L' as [<- L'].
      replace (seenBy (context (joined s0 w)) (slot_at (joined s0 w) c i k) (dot e')) with false;
        [reflexivity|].
      symmetry. unfold seenBy. rewrite slot_at_joined. unfold joinSlots; cbn [scope context joined].
      unfold ctx_union, ctx_subtracting. rewrite (Hnew e' L'), (sb_noscopes _ _ Hb c i k (dot e')).
      cbn [orb]. unfold ctx_empty.
      destruct (context w (dot e')) eqn:Cw.
      + exfalso. assert (T : seenBy (context w) (slot_at w c i k) (dot e') = true)
          by (unfold seenBy; rewrite Cw; reflexivity).
        apply Hwo in T. rewrite Hnew in T by assumption. discriminate.
      + destruct (scope (slot_at w c i k) (dot e')) eqn:Sw; [|reflexivity].
        exfalso. assert (T : seenBy (context w) (slot_at w c i k) (dot e') = true)
          by (unfold seenBy; rewrite Sw, orb_true_r; reflexivity).
        apply Hwo in T. rewrite Hnew in T by assumption. discriminate.
  Qed.

  (** A slot the write did not carry, empty at the writer, holds on any replica only
      entries the writer had not seen. *)
  Lemma uncarried_empty_slot w c i k e :
    state_wf w -> rep_outbox r c i k = false -> entries (slot_at s0 c i k) = [] ->
    In e (entries (slot_at (joined (joined s0 w) (delta_state delta)) c i k)) ->
    In e (entries (slot_at w c i k)) /\ context s0 (dot e) = false.
  Proof.
    intros Hw Ho H0 He.
    assert (Hw0 := sb_wf _ _ Hb).
    assert (Hu0 : state_wf (joined s0 w)) by (apply joined_wf; assumption).
    assert (Hd : state_wf (delta_state delta)) by (apply delta_state_wf, (sealed_delta_valid s0); assumption).
    destruct (in_joined_inv _ _ c i k e Hu0 Hd He) as [[I _]|[I _]].
    - destruct (in_joined_inv _ _ c i k e Hw0 Hw I) as [[I' _]|[I' S]].
      + rewrite H0 in I'. destruct I'.
      + split; [assumption|]. unfold seenBy in S. apply orb_false_iff in S; tauto.
    - unfold delta in I. rewrite sealed_delta_slot, Ho in I. destruct I.
  Qed.
End LaterWrite.

(** ** Rule 2: a causally later write wins, whatever the clocks *)

Theorem rule2_store_causally_later_write_wins r V ref name v now seq r' d :
  sealed_replica r V ->
  set r ref name v now = Some (r', d) ->
  let s0 := rep_state r in
  let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)) in
  (* the new stamp exceeds every stamp the writer had seen, however far behind its
     physical time [now] is, when its clock follows what it observed at [now] *)
  (within_lead r now -> forall x, context s0 x = true -> stamp_lt x d) /\
  (* on any replica, no write the writer had seen survives in the field *)
  (forall w, state_wf w ->
     forall e, In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name))) ->
               dot e = d \/ context s0 (dot e) = false) /\
  (* and where nothing concurrent arrived, the field is the new value alone *)
  (forall w, state_wf w -> observed_by w s0 ->
     entries (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name)) = [mkEntry d (PScalar v)] /\
     fieldPayload (record (t w) ref) name = Some (PScalar v)).
Proof.
  intros Hs E s0 t.
  pose proof (put_result V r ref [(name, FWScalar v)] now r' d Hs E) as Res.
  pose proof (fun Hl => put_after_seen V r ref [(name, FWScalar v)] now r' d Hs Hl E) as Hlt.
  destruct Res as [Hp [Hr [Hu [_ Hid]]]].
  pose proof (set_field r ref name v now r' d E) as [F O].
  assert (Hb : sealed_base s0 V) by apply (sr_base _ _ Hs).
  rewrite <- Hid in Hu.
  assert (Hnew : forall e, In e (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Field name))) ->
                 context s0 (dot e) = false).
  { intros e He. rewrite F in He. destruct He as [<-|[]]. cbn [dot].
    apply (seal_new_entry s0 V (hlc d) r' Hb Hu (mkEntry d (PScalar v))); cbn [dot]; [congruence | exact Hu]. }
  split; [|split].
  - intros Hl x Hx. apply stamp_lt_of_hlc, (Hlt Hl). exact Hx.
  - intros w Hw e He. destruct (later_write_survivors s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O He)
      as [[e' [I D]]|C]; [left|right; exact C].
    rewrite F in I. destruct I as [<-|[]]. symmetry; exact D.
  - intros w Hw Hwo. assert (X := later_write_exact s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ Hw Hwo O Hnew).
    rewrite F in X. split; [exact X|]. unfold fieldPayload, record. fold (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name)).
    unfold t. rewrite X. reflexivity.
Qed.

(** ** Rule 6: a fork resolution supersedes every version it observed *)

Theorem rule6_store_resolution_supersedes_observed_versions r V ref name f now seq r' d :
  sealed_replica r V ->
  setFile r ref name f now = Some (r', d) ->
  let s0 := rep_state r in
  let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)) in
  (* on any replica, whatever else it holds, no version the resolver had seen remains *)
  (forall w, state_wf w ->
     forall e, In e (entries (slot_at s0 (ref_collection ref) (ref_id ref) (Field name))) ->
               ~ In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name)))) /\
  (* where nothing concurrent arrived, the resolution is the only version: no fork *)
  (forall w, state_wf w -> observed_by w s0 ->
     entries (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name)) = [mkEntry d (PFile f)] /\
     fileFork (record (t w) ref) name = false).
Proof.
  intros Hs E s0 t.
  pose proof (put_result V r ref [(name, FWFile f)] now r' d Hs E) as Res.
  destruct Res as [Hp [Hr [Hu [_ Hid]]]].
  pose proof (setFile_field r ref name f now r' d E) as [F O].
  assert (Hb : sealed_base s0 V) by apply (sr_base _ _ Hs).
  rewrite <- Hid in Hu.
  assert (Hdnew : context s0 d = false).
  { apply (seal_new_entry s0 V (hlc d) r' Hb Hu (mkEntry d (PFile f))); cbn [dot]; [congruence | exact Hu]. }
  assert (Hnew : forall e, In e (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) (Field name))) ->
                 context s0 (dot e) = false).
  { intros e He. rewrite F in He. destruct He as [<-|[]]. exact Hdnew. }
  split.
  - intros w Hw e He0 He.
    assert (C : context s0 (dot e) = true).
    { apply (seal_s0_entry s0 V (hlc d) seq r' Hb Hp Hu _ _ _ e He0). }
    destruct (later_write_survivors s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O He)
      as [[e' [I D]]|C']; [|congruence].
    rewrite F in I. destruct I as [<-|[]]. cbn [dot] in D. rewrite <- D in C. congruence.
  - intros w Hw Hwo. assert (X := later_write_exact s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ Hw Hwo O Hnew).
    rewrite F in X. split; [exact X|]. unfold fileFork, fileVersions, record.
    fold (slot_at (t w) (ref_collection ref) (ref_id ref) (Field name)). unfold t. rewrite X. cbn.
    unfold hash_eqb. destruct (ContentHash_eq_dec (hash f) (hash f)); [reflexivity|contradiction].
Qed.

(** Keeping one version of a fork is such a write. *)
Lemma keepVersion_is_setFile r ref name h now r' d :
  keepVersion r ref name h now = Some (r', d) ->
  exists f, hash f = h /\ setFile r ref name f now = Some (r', d).
Proof.
  unfold keepVersion. destruct (find _ _) as [[st f]|] eqn:E; [|discriminate].
  intro H. exists f. split; [|exact H].
  apply find_some in E as [_ E]. cbn in E. unfold hash_eqb in E.
  destruct (ContentHash_eq_dec (hash f) h); [assumption|discriminate].
Qed.

(** ** Rule 5: re-creation after an observed delete shows no old field *)

Section Recreate.
  Variables (r : Replica) (V : VersionVector) (ref : RecordRef) (seq : nat) (r' : Replica) (d : Stamp).
  Hypothesis Hs : sealed_replica r V.
  Hypothesis Hres : op_result r V r' d.
  Hypothesis Honly : only_dot ref d r'.
  Hypothesis Hcl : cleared ref (rep_state r) r'.

  Let s0 := rep_state r.
  Let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)).

  Lemma recreate_merged :
    (forall w, state_wf w -> forall k e,
       In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) k)) ->
       dot e = d \/ context s0 (dot e) = false) /\
    (forall w, state_wf w -> observed_by w s0 -> forall k,
       entries (slot_at (t w) (ref_collection ref) (ref_id ref) k) =
       entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)).
  Proof.
    destruct Hres as [Hp [Hr [Hu [_ Hid]]]].
    assert (Hb : sealed_base s0 V) by apply (sr_base _ _ Hs).
    rewrite <- Hid in Hu.
    assert (Hnew : forall k e, In e (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)) ->
                   context s0 (dot e) = false).
    { intros k e He. rewrite (Honly k e He).
      apply (seal_new_entry s0 V (hlc d) r' Hb Hu (mkEntry d Marker)); cbn [dot]; [congruence | exact Hu]. }
    split.
    - intros w Hw k e He. destruct (Hcl k) as [O|Z].
      + destruct (later_write_survivors s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O He)
          as [[e' [I D]]|C]; [left|right; exact C].
        rewrite <- D. apply (Honly k e' I).
      + destruct (rep_outbox r' (ref_collection ref) (ref_id ref) k) eqn:O.
        * destruct (later_write_survivors s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O He)
            as [[e' [I D]]|C]; [left|right; exact C].
          rewrite <- D. apply (Honly k e' I).
        * right. apply (uncarried_empty_slot s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O Z He).
    - intros w Hw Hwo k. destruct (rep_outbox r' (ref_collection ref) (ref_id ref) k) eqn:O.
      + apply (later_write_exact s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ Hw Hwo O (Hnew k)).
      + destruct (Hcl k) as [O'|Z]; [congruence|].
        rewrite (pd_untouched _ _ _ _ Hp _ _ _ O), Z.
        destruct (entries (slot_at (t w) (ref_collection ref) (ref_id ref) k)) as [|e l] eqn:L; [reflexivity|].
        exfalso. assert (He : In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) k)))
          by (rewrite L; left; reflexivity).
        destruct (uncarried_empty_slot s0 V (hlc d) seq r' Hb Hp Hu w _ _ _ e Hw O Z He) as [I C].
        assert (T : seenBy (context w) (slot_at w (ref_collection ref) (ref_id ref) k) (dot e) = true)
          by (destruct (Hw (ref_collection ref) (ref_id ref) k) as [_ [S _]]; apply S; exact I).
        apply Hwo in T. congruence.
  Qed.
End Recreate.

(** Re-creating a record that the writer sees deleted — by any write to it ([put]) —
    leaves only the new write in the record: locally, on every replica that also holds
    what the writer had seen (every surviving entry is the new write's or one the writer
    never saw), and, where nothing concurrent arrived, the record is exactly the new one. *)
Theorem rule5_store_recreation_after_observed_delete r V ref fields now seq r' d :
  sealed_replica r V ->
  isVisible (record (rep_state r) ref) = false ->
  put r ref fields now = Some (r', d) ->
  let s0 := rep_state r in
  let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)) in
  (forall k e, In e (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)) -> dot e = d) /\
  (forall w, state_wf w -> forall k e,
     In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) k)) ->
     dot e = d \/ context s0 (dot e) = false) /\
  (forall w, state_wf w -> observed_by w s0 -> forall k,
     entries (slot_at (t w) (ref_collection ref) (ref_id ref) k) =
     entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)).
Proof.
  intros Hs Hinv E s0 t.
  pose proof (put_result V r ref fields now r' d Hs E) as Res.
  pose proof (put_recreates r V ref fields now r' d Hs Hinv E) as [Ho Hc].
  split; [exact Ho|]. apply (recreate_merged r V ref seq r' d Hs Res Ho Hc).
Qed.

(** The same for an explicit [create], whether or not the record was visible. *)
Theorem rule5_store_create_replaces_observed_record r V ref fields now seq r' d :
  sealed_replica r V ->
  create r ref fields now = Some (r', d) ->
  let s0 := rep_state r in
  let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)) in
  (forall k e, In e (entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)) -> dot e = d) /\
  (forall w, state_wf w -> forall k e,
     In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) k)) ->
     dot e = d \/ context s0 (dot e) = false) /\
  (forall w, state_wf w -> observed_by w s0 -> forall k,
     entries (slot_at (t w) (ref_collection ref) (ref_id ref) k) =
     entries (slot_at (rep_state r') (ref_collection ref) (ref_id ref) k)).
Proof.
  intros Hs E s0 t.
  pose proof (create_result V r ref fields now r' d Hs E) as Res.
  pose proof (create_recreates r V ref fields now r' d Hs E) as [Ho Hc].
  split; [exact Ho|]. apply (recreate_merged r V ref seq r' d Hs Res Ho Hc).
Qed.

(** ** Rule 1: concurrent scalar writes — the greater stamp wins on every replica *)

Theorem rule1_store_concurrent_writes_greater_stamp_wins rA rB V ref name v1 v2 nowA nowB seqA seqB
    rA' da rB' db tA tB :
  concurrent_pair rA rB V ->
  set rA ref name v1 nowA = Some (rA', da) ->
  set rB ref name v2 nowB = Some (rB', db) ->
  stamp_lt da db ->
  apply_step (rep_state rA') (sealed_delta rB' V (hlc db) seqB) tA ->
  apply_step (rep_state rB') (sealed_delta rA' V (hlc da) seqA) tB ->
  state_eq tA tB /\
  entries (slot_at tA (ref_collection ref) (ref_id ref) (Field name)) =
    [mkEntry da (PScalar v1); mkEntry db (PScalar v2)] /\
  fieldPayload (record tA ref) name = Some (PScalar v2) /\
  fieldPayload (record tB ref) name = Some (PScalar v2).
Proof.
  intros Hpair EA EB Hlt HA HB. pose proof Hpair as [HsA [HsB [Hst Hne]]].
  pose proof (put_result V rA ref [(name, FWScalar v1)] nowA rA' da HsA EA) as ResA.
  pose proof (put_result V rB ref [(name, FWScalar v2)] nowB rB' db HsB EB) as ResB.
  pose proof (set_field rA ref name v1 nowA rA' da EA) as [FA OA].
  pose proof (set_field rB ref name v2 nowB rB' db EB) as [FB _].
  destruct (op_pending_exchange rA rB V rA' da rB' db seqA seqB tA tB Hpair ResA ResB HA HB) as [Heq HtB].
  destruct ResA as [HpA [HrA [HuA [_ HidA]]]]. destruct ResB as [HpB [HrB [HuB [HltB HidB]]]].
  rewrite Hst in HpA. set (s0 := rep_state rB) in *. set (dA := sealed_delta rA' V (hlc da) seqA) in *.
  assert (Hb : sealed_base s0 V) by apply (sr_base _ _ HsB).
  assert (HwB : state_wf (rep_state rB')) by (apply (pending_wf s0 V (hlc db)); assumption).
  assert (HwA : state_wf (delta_state dA)).
  { apply delta_state_wf, (sealed_delta_valid s0); [exact Hb | exact HpA | rewrite HidA; exact HuA]. }
  assert (HtA : state_eq tA (joined (rep_state rB') (delta_state dA))) by (eapply state_eq_trans; eassumption).
  set (c := ref_collection ref) in *. set (i := ref_id ref) in *.
  assert (UA : seenBy (context (rep_state rB')) (slot_at (rep_state rB') c i (Field name)) da = false).
  { apply (pending_unseen s0 V (hlc db)); [exact HpB | | ].
    - rewrite HrA, HidB. exact Hne.
    - apply (new_dot_not_in_V V (rep_id rA)); assumption. }
  assert (UB : seenBy (context (delta_state dA)) (slot_at (delta_state dA) c i (Field name)) db = false).
  { apply (sealed_delta_unseen s0 V); [exact HpA | | ].
    - rewrite HrB, HidA. intro E2; apply Hne; symmetry; exact E2.
    - apply (new_dot_not_in_V V (rep_id rB)); assumption. }
  assert (Hne' : stamp_eqb da db = false) by (apply stamp_eqb_neq, stamp_lt_neq; exact Hlt).
  assert (Hne'' : stamp_eqb db da = false) by (rewrite stamp_eqb_sym; exact Hne').
  assert (Hall : entries (slot_at tA c i (Field name)) = [mkEntry da (PScalar v1); mkEntry db (PScalar v2)]).
  { rewrite (state_eq_entries _ _ c i (Field name) HtA).
    apply (ordered_lookup_ext dot); [apply (joined_wf _ _ HwB HwA c i (Field name)) | |].
    - constructor; [repeat constructor|]. repeat constructor. exact Hlt.
    - intro x. rewrite lookup_joined by assumption.
      assert (LdA : lookup dot (entries (slot_at (delta_state dA) c i (Field name))) x =
                    lookup dot [mkEntry da (PScalar v1)] x)
        by (unfold dA; rewrite sealed_delta_slot, OA; cbn [entries]; rewrite FA; reflexivity).
      rewrite LdA, FB. cbn [lookup dot].
      destruct (stamp_eqb_spec db x) as [<-|N1]; [|destruct (stamp_eqb_spec da x) as [<-|N2]].
      + rewrite Hne'. cbn [join_at]. rewrite UB, ?stamp_eqb_refl. reflexivity.
      + cbn [join_at]. rewrite UA. reflexivity.
      + reflexivity. }
  split; [exact Heq|]. split; [exact Hall|].
  assert (Hread : forall t, entries (slot_at t c i (Field name)) = [mkEntry da (PScalar v1); mkEntry db (PScalar v2)] ->
                  fieldPayload (record t ref) name = Some (PScalar v2)).
  { intros t Ht. unfold fieldPayload.
    change (entries (slots (record t ref) (Field name))) with (entries (slot_at t c i (Field name))).
    rewrite Ht. reflexivity. }
  split; apply Hread; [exact Hall|].
  rewrite <- (state_eq_entries _ _ c i (Field name) Heq). exact Hall.
Qed.

(** ** Rule 4, acknowledgement: keeping the record removes the tombstones the
    acknowledger saw *)

Theorem rule4_keepRecord_removes_observed_tombstones r V ref now seq r' d :
  sealed_replica r V ->
  keepRecord r ref now = Some (r', d) ->
  let s0 := rep_state r in
  let t w := joined (joined s0 w) (delta_state (sealed_delta r' V (hlc d) seq)) in
  forall w, state_wf w ->
  forall e, In e (entries (slot_at (t w) (ref_collection ref) (ref_id ref) Tombstones)) ->
            context s0 (dot e) = false.
Proof.
  intros Hs E s0 t w Hw e He.
  pose proof (keepRecord_result V r ref now r' d Hs E) as Res.
  destruct Res as [Hp [Hr [Hu [_ Hid]]]]. rewrite <- Hid in Hu.
  pose proof (keepRecord_tombstones r ref now r' d E) as [F O].
  destruct (later_write_survivors s0 V (hlc d) seq r' (sr_base _ _ Hs) Hp Hu w _ _ _ e Hw O He)
    as [[e' [I _]]|C]; [rewrite F in I; destruct I | exact C].
Qed.

(** ** The scenarios are not vacuous *)

(** Two fresh replicas form a concurrent pair. *)
Theorem newReplicas_concurrent a b : a <> b -> concurrent_pair (newReplica a) (newReplica b) vv_empty.
Proof.
  intro H. split; [apply newReplica_sealed|]. split; [apply newReplica_sealed|]. split; [reflexivity|].
  exact H.
Qed.

(** Every mutation of a sealed replica succeeds, at any time: the [Some] hypotheses of the
    scenarios are met ([tick] throws only on a clock that issued [UInt64.max] itself). *)
Theorem sealed_replica_writes r V ref fields name x now :
  sealed_replica r V ->
  (exists r' d, put r ref fields now = Some (r', d)) /\
  (exists r' d, add r ref name x now = Some (r', d)) /\
  (exists r' d, remove r ref name x now = Some (r', d)) /\
  (exists r' d, create r ref fields now = Some (r', d)) /\
  (exists r' d, delete r ref now = Some (r', d)) /\
  (exists r' d, keepRecord r ref now = Some (r', d)).
Proof.
  intro Hs. pose proof (sr_room _ _ Hs) as Hroom.
  assert (N : nextDot r now <> None) by (rewrite nextDot_fails; lia).
  repeat split.
  - destruct (put r ref fields now) as [[r' d]|] eqn:E; [eauto|]. apply put_fails in E. contradiction.
  - destruct (add r ref name x now) as [[r' d]|] eqn:E; [eauto|]. apply add_fails in E. contradiction.
  - destruct (remove r ref name x now) as [[r' d]|] eqn:E; [eauto|]. apply remove_fails in E. contradiction.
  - destruct (create r ref fields now) as [[r' d]|] eqn:E; [eauto|]. apply create_fails in E. contradiction.
  - destruct (delete r ref now) as [[r' d]|] eqn:E; [eauto|]. apply delete_fails in E. contradiction.
  - destruct (keepRecord r ref now) as [[r' d]|] eqn:E; [eauto|]. apply keepRecord_fails in E. contradiction.
Qed.

(** In every exchange, each delta can be applied to the other replica's state: the
    [apply_step] hypotheses of the rules are always met. *)
Theorem exchange_applicable s0 V uA uB seqB rA rB :
  sealed_base s0 V -> Pending s0 V uA rA -> Pending s0 V uB rB -> rep_id rA <> rep_id rB ->
  V (rep_id rB) < uB ->
  exists tA, apply_step (rep_state rA) (sealed_delta rB V uB seqB) tA.
Proof.
  intros Hb HpA HpB Hne HuB. exists (apply_fast (rep_state rA) (sealed_delta rB V uB seqB)).
  assert (Hdeps : forall r0, dependencies (sealed_delta rB V uB seqB) r0 = V r0).
  { intro r0. unfold sealed_delta, makeDelta; cbn [dependencies]. rewrite (pd_sealed _ _ _ _ HpB).
    unfold vv_set. destruct (Nat.eqb_spec r0 (rep_id rB)); subst; reflexivity. }
  apply ApplyFastPath.
  - intro H. unfold hasApplied, sealed_delta, makeDelta in H; cbn [origin upTo] in H.
    apply (covers_ext _ _ _ _ (pd_ctx _ _ _ _ HpA)) in H. apply covers_vv_le in H.
    rewrite vv_set_other in H by (intro E; apply Hne; symmetry; exact E). lia.
  - intro r0. rewrite Hdeps. eapply covers_ext; [apply ctx_eq_sym, (pd_ctx _ _ _ _ HpA)|].
    apply covers_of_vv. unfold vv_set. pose proof (pd_u _ _ _ _ HpA).
    destruct (Nat.eqb_spec r0 (rep_id rA)); subst; lia.
  - exists (vv_set V (rep_id rA) uA). split; [apply (pd_ctx _ _ _ _ HpA)|]. split.
    + cbn [origin sealed_delta makeDelta]. rewrite Hdeps. apply vv_set_other.
      intro E; apply Hne; symmetry; exact E.
    + apply (pd_noscopes _ _ _ _ HpA).
Qed.
