import Benchmark
import ConcordCodec
import ConcordCore
import ConcordTesting

/// The core issue's workload: a 100k-operation delta — 100,000 scalar field writes over
/// 10,000 records × 10 fields, short strings and integers — encoded, decoded, and decoded
/// and applied into an empty and into a populated state.
///
/// Each benchmark measures one whole 100k-operation delta per iteration: operations per
/// second are 100,000 × iterations per second (the `throughput` column, scaled by `kilo`
/// is thousands of deltas… see README). The custom metric `bytes/op ×100` is the encoded
/// size per operation, times 100.
let benchmarks: @Sendable () -> Void = {
    let operations = 100_000
    var writer = Replica(id: ReplicaID(high: 0xa, low: 1))
    let first = Workload.fieldWrites(on: &writer, records: 10_000, fields: 10, round: 0)
    let second = Workload.fieldWrites(on: &writer, records: 10_000, fields: 10, round: 1)
    let firstBytes = DeltaCodec.encode(first)
    let secondBytes = DeltaCodec.encode(second)
    var populated = StoreState()
    try! populated.apply(first)
    let populatedSnapshot = try! SnapshotCodec.encode(populated)

    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal, .peakMemoryResident],
        timeUnits: .milliseconds,
        warmupIterations: 2,
        scalingFactor: .one,
        maxDuration: .seconds(20),
        maxIterations: 30
    )

    Benchmark("encode 100k-op delta", configuration: configuration.adding(.custom("bytes/op ×100"))) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(DeltaCodec.encode(first))
        }
        benchmark.measurement(.custom("bytes/op ×100"), firstBytes.count * 100 / operations)
    }

    Benchmark("decode 100k-op delta", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try DeltaCodec.decode(firstBytes))
        }
    }

    Benchmark("decode+apply 100k-op delta into empty state", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            var state = StoreState()
            try state.apply(try DeltaCodec.decode(firstBytes))
            blackHole(state)
        }
    }

    Benchmark("decode+apply 100k-op delta into populated state", configuration: configuration) { benchmark in
        // A private, unshared copy of the populated state, made before the measurement.
        var state = try SnapshotCodec.decode(populatedSnapshot)
        benchmark.startMeasurement()
        try state.apply(try DeltaCodec.decode(secondBytes))
        benchmark.stopMeasurement()
        blackHole(state)
    }
}

extension Benchmark.Configuration {
    func adding(_ metric: BenchmarkMetric) -> Benchmark.Configuration {
        var copy = self
        copy.metrics.append(metric)
        return copy
    }
}
