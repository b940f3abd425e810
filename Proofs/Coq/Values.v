(** * Values.v — scalar values, file references, payloads, entries and slot keys.

    Mirrors [Sources/ConcordCore/Values/ScalarValue.swift],
    [Sources/ConcordCore/Values/FileRef.swift], [Sources/ConcordCore/DotStore/Entry.swift]
    and [Sources/ConcordCore/Record/SlotKey.swift].  Only equality matters to the merge,
    so each value is modelled by what Swift's [==] compares. *)

From Coq Require Import ZArith NArith String List Bool.
From Concord Require Import Stamp.
Import ListNotations.

(** [enum ScalarValue]: [Int64] as an integer, [Double] by its 64-bit pattern (Swift's
    [==] compares [bitPattern]), [String] as a string, [[UInt8]] as a list of bytes. *)
Inductive ScalarValue :=
| SNull
| SBool (b : bool)
| SInt (i : Z)
| SDouble (bitPattern : N)
| SString (s : string)
| SBytes (bytes : list N).

Definition ScalarValue_eq_dec (a b : ScalarValue) : {a = b} + {a <> b}.
Proof.
  decide equality; try apply Bool.bool_dec; try apply Z.eq_dec; try apply N.eq_dec;
    try apply string_dec; apply list_eq_dec, N.eq_dec.
Defined.

(** [struct ContentHash { bytes: [UInt8] }] and
    [struct FileRef { hash; size: UInt64; mediaType: String? }]. *)
Record ContentHash := mkHash { hash_bytes : list N }.
Record FileRef := mkFileRef { hash : ContentHash; size : N; mediaType : option string }.

Definition ContentHash_eq_dec (a b : ContentHash) : {a = b} + {a <> b}.
Proof. decide equality; apply list_eq_dec, N.eq_dec. Defined.

Definition FileRef_eq_dec (a b : FileRef) : {a = b} + {a <> b}.
Proof.
  decide equality; [decide equality; apply string_dec | apply N.eq_dec | apply ContentHash_eq_dec].
Defined.

Definition hash_eqb (a b : ContentHash) : bool :=
  if ContentHash_eq_dec a b then true else false.

(** [enum Payload { case marker; case scalar(ScalarValue); case file(FileRef) }] *)
Inductive Payload :=
| Marker
| PScalar (v : ScalarValue)
| PFile (f : FileRef).

(** [struct Entry { dot: Stamp; payload: Payload }] *)
Record Entry := mkEntry { dot : Stamp; payload : Payload }.

(** [enum SlotKey { case liveness; case tombstones; case field(String);
    case element(String, ScalarValue) }] *)
Inductive SlotKey :=
| Liveness
| Tombstones
| Field (name : string)
| Element (name : string) (element : ScalarValue).

Definition SlotKey_eq_dec (a b : SlotKey) : {a = b} + {a <> b}.
Proof. decide equality; try apply ScalarValue_eq_dec; apply string_dec. Defined.

Definition slotkey_eqb (a b : SlotKey) : bool := if SlotKey_eq_dec a b then true else false.

Lemma slotkey_eqb_refl k : slotkey_eqb k k = true.
Proof. unfold slotkey_eqb; destruct (SlotKey_eq_dec k k); congruence. Qed.

Lemma slotkey_eqb_spec a b : reflect (a = b) (slotkey_eqb a b).
Proof. unfold slotkey_eqb; destruct (SlotKey_eq_dec a b); constructor; assumption. Qed.

(** [struct RecordRef { collection: String; id: String }] *)
Record RecordRef := mkRef { ref_collection : string; ref_id : string }.

(** Whether the record at collection [c], id [i] is [ref]. *)
Definition is_ref (ref : RecordRef) (c i : string) : bool :=
  String.eqb (ref_collection ref) c && String.eqb (ref_id ref) i.

Lemma is_ref_refl ref : is_ref ref (ref_collection ref) (ref_id ref) = true.
Proof. unfold is_ref; rewrite !String.eqb_refl; reflexivity. Qed.

Lemma is_ref_true ref c i : is_ref ref c i = true -> c = ref_collection ref /\ i = ref_id ref.
Proof.
  unfold is_ref; rewrite andb_true_iff, !String.eqb_eq. intros [-> ->]; auto.
Qed.

(** [SlotKey.accepts(_:)]: which payloads a slot of each kind may hold. *)
Definition payload_fits (p : Payload) (k : SlotKey) : bool :=
  match k, p with
  | Liveness, Marker | Tombstones, Marker | Element _ _, Marker
  | Field _, PScalar _ | Field _, PFile _ => true
  | _, _ => false
  end.
