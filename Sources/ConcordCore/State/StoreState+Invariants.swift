extension StoreState {
    /// Checks the invariants: slots non-empty and sorted, every entry's dot seen in its
    /// slot's effective context, scopes disjoint from the context, no empty records.
    public func _checkInvariants() {
        context._checkInvariants()
        precondition(
            hasScopes == records.values.contains(where: Self.hasScope),
            "hasScopes out of date")
        do {
            for (_, record) in records {
                precondition(!record.isEmpty, "empty record stored")
                if let scope = record.scope {
                    precondition(!scope.isEmpty, "empty record scope stored")
                    precondition(scope.subtracting(context) == scope, "record scope overlaps context")
                }
                for (key, slot) in record.slots {
                    precondition(!slot.entries.isEmpty || slot.scope != nil, "empty slot \(key) stored")
                    precondition(DotStore.isWellOrdered(slot.entries), "slot \(key) not sorted")
                    if let scope = slot.scope {
                        precondition(!scope.isEmpty, "empty scope stored")
                        precondition(scope.subtracting(context) == scope, "scope overlaps context")
                        if let recordScope = record.scope {
                            precondition(scope.subtracting(recordScope) == scope, "slot scope overlaps the record's")
                        }
                    }
                    for entry in slot.entries {
                        precondition(
                            context.contains(entry.dot) || (slot.scope?.contains(entry.dot) ?? false)
                                || (record.scope?.contains(entry.dot) ?? false),
                            "entry \(entry.dot) in \(key) not in its context")
                        precondition(key.accepts(entry.payload), "payload \(entry.payload) in slot \(key)")
                    }
                }
            }
        }
    }
}
