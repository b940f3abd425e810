(** * Assumptions.v — what every main result rests on.

    [make] compiles this file after the development and [check-assumptions.sh] requires
    each line of output to be "Closed under the global context": no axiom, no
    parameter, no admitted lemma.  Every [Theorem] of the development must be listed. *)

From Concord Require Import Stamp Context DotStore Values CausalRegister ORSet StoreState
                            Delta Replica Rules Convergence Rename.

(* Stamps, the hybrid logical clock *)
Print Assumptions stamp_trichotomy.
Print Assumptions stamp_lt_trans.
Print Assumptions stamp_lt_irrefl.
Print Assumptions tick_fails.
Print Assumptions tick_succeeds.
Print Assumptions tick_gt_latest.
Print Assumptions tick_ge_physical.
Print Assumptions tick_gt_observed.
Print Assumptions tick_le_lead.
Print Assumptions tick_le_uint64Max.
Print Assumptions observe_never_stops_tick.
Print Assumptions tick_after_observe_le_lead.
Print Assumptions tick_again_within_lead.
Print Assumptions rule2_tick_after_observe.
Print Assumptions rule2_stamp_after_observe.

(* Causal contexts and version vectors *)
Print Assumptions ctx_union_comm.
Print Assumptions ctx_union_assoc.
Print Assumptions ctx_union_idem.
Print Assumptions vv_merging_comm.
Print Assumptions vv_merging_assoc.
Print Assumptions vv_merging_idem.
Print Assumptions ctx_of_vv_merging.

(* The dot-store join (DotStore.join) *)
Print Assumptions lookup_dotstore_join.
Print Assumptions dotstore_join_ordered.
Print Assumptions ordered_lookup_ext.
Print Assumptions isWellOrdered_ordered.
Print Assumptions dotstore_join_comm.
Print Assumptions dotstore_join_assoc.
Print Assumptions dotstore_join_idem.
Print Assumptions dotstore_join_overwrite.

(* LWW- and multi-value registers (CausalRegister) *)
Print Assumptions reg_joined_comm.
Print Assumptions reg_joined_assoc.
Print Assumptions reg_joined_idem.
Print Assumptions rule1_lww_concurrent_greater_stamp_wins.
Print Assumptions rule2_register_causally_later_write_wins.
Print Assumptions rule2_register_observed_versions_removed.
Print Assumptions reg_clear_removes_exactly_observed.
Print Assumptions rule2_lww_causally_later_write_wins.
Print Assumptions rule6_concurrent_different_content_forks.
Print Assumptions rule6_concurrent_same_content_no_fork.
Print Assumptions rule6_resolution_supersedes_observed_versions.

(* The add-wins OR-set *)
Print Assumptions or_joined_comm.
Print Assumptions or_joined_assoc.
Print Assumptions or_joined_idem.
Print Assumptions rule3_add_wins_over_concurrent_remove.
Print Assumptions rule3_remove_removes_exactly_observed.
Print Assumptions rule3_unseen_add_survives.

(* Slots, records and the store state *)
Print Assumptions joinSlots_comm.
Print Assumptions joinSlots_assoc.
Print Assumptions joinSlots_idem.
Print Assumptions joinRecords_comm.
Print Assumptions joinRecords_assoc.
Print Assumptions joinRecords_idem.
Print Assumptions joined_comm.
Print Assumptions joined_assoc.
Print Assumptions joined_idem.
Print Assumptions joined_wf.

(* Deltas *)
Print Assumptions delta_state_wf.
Print Assumptions apply_fast_eq_join.
Print Assumptions apply_eq_join.
Print Assumptions apply_twice.
Print Assumptions purge_removes_exactly_observed.
Print Assumptions apply_fast_untouched.

(* The replica: local writes and sealing *)
Print Assumptions seal_is_join.
Print Assumptions sealed_delta_valid.
Print Assumptions keepVersion_is_setFile.
Print Assumptions newReplica_sealed.
Print Assumptions nextDot_pass.

(* The rules on the store *)
Print Assumptions exchange.
Print Assumptions exchange_applicable.
Print Assumptions newReplicas_concurrent.
Print Assumptions sealed_replica_writes.
Print Assumptions rule1_store_concurrent_writes_greater_stamp_wins.
Print Assumptions rule2_store_causally_later_write_wins.
Print Assumptions rule3_store_add_wins_over_concurrent_remove.
Print Assumptions rule4_delete_concurrent_with_update_keeps_record.
Print Assumptions rule4_keepRecord_removes_observed_tombstones.
Print Assumptions rule5_store_recreation_after_observed_delete.
Print Assumptions rule5_store_create_replaces_observed_record.
Print Assumptions rule6_store_concurrent_file_writes_fork.
Print Assumptions rule6_store_resolution_supersedes_observed_versions.

(* Strong eventual consistency *)
Print Assumptions fold_joined_same_set.
Print Assumptions run_is_fold.
Print Assumptions strong_eventual_consistency.

(* Merging a fork of a replica's history: the rename of one side's dots *)
Print Assumptions rn_involutive.
Print Assumptions rn_injective.
Print Assumptions rename_commutes_with_join.
Print Assumptions rename_commutes_with_join_sorted.
Print Assumptions fork_merge_keeps_both_sides.
Print Assumptions fork_unrenamed_can_lose.
