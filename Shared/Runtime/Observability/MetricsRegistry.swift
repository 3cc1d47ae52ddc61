import Synchronization

/// The metrics a process exposes on `/metrics`, rendered in Prometheus text format 0.0.4.
/// Counters and gauges are atomics, histograms a small locked value; subsystems with their own
/// bookkeeping add a collector that writes its families when the page is rendered.
public final class MetricsRegistry: Sendable {
    private let state = Mutex(State())

    private struct State {
        var counters: [String: (help: String, series: [(labels: Labels, counter: Counter)])] = [:]
        var gauges: [String: (help: String, series: [(labels: Labels, gauge: Gauge)])] = [:]
        var histograms: [String: (help: String, series: [(labels: Labels, histogram: Histogram)])] = [:]
        var collectors: [@Sendable (inout MetricsText) -> Void] = []
    }

    public init() {}

    /// The counter `name` with `labels`, created on first use.
    public func counter(_ name: String, help: String, labels: Labels = [:]) -> Counter {
        state.withLock { state in
            if let existing = state.counters[name]?.series.first(where: { $0.labels == labels }) {
                return existing.counter
            }
            let counter = Counter()
            state.counters[name, default: (help, [])].series.append((labels, counter))
            return counter
        }
    }

    /// The gauge `name` with `labels`, created on first use.
    public func gauge(_ name: String, help: String, labels: Labels = [:]) -> Gauge {
        state.withLock { state in
            if let existing = state.gauges[name]?.series.first(where: { $0.labels == labels }) {
                return existing.gauge
            }
            let gauge = Gauge()
            state.gauges[name, default: (help, [])].series.append((labels, gauge))
            return gauge
        }
    }

    /// The histogram `name` with `labels` and upper bounds `buckets` (seconds, ascending), created
    /// on first use; a series made before keeps the buckets it was made with.
    public func histogram(_ name: String, help: String, buckets: [Double], labels: Labels = [:]) -> Histogram {
        state.withLock { state in
            if let existing = state.histograms[name]?.series.first(where: { $0.labels == labels }) {
                return existing.histogram
            }
            let histogram = Histogram(bounds: buckets)
            state.histograms[name, default: (help, [])].series.append((labels, histogram))
            return histogram
        }
    }

    /// Adds a function that writes metric families each time the page is rendered.
    public func addCollector(_ collector: @escaping @Sendable (inout MetricsText) -> Void) {
        state.withLock { $0.collectors.append(collector) }
    }

    /// The value of the sample `series` on the page now, written as the page writes it (`name` or
    /// `name{label="value",…}` with the labels sorted); nil when the page has no such sample.
    public func value(_ series: String) -> Double? {
        let prefix = series + " "
        for line in render().split(separator: "\n") where line.hasPrefix(prefix) {
            return Double(line.dropFirst(prefix.count))
        }
        return nil
    }

    /// The whole page.
    public func render() -> String {
        let (counters, gauges, histograms, collectors) = state.withLock {
            ($0.counters, $0.gauges, $0.histograms, $0.collectors)
        }
        var text = MetricsText()
        for name in counters.keys.sorted() {
            let family = counters[name]!
            text.family(name, type: "counter", help: family.help)
            for series in family.series { text.sample(name, series.labels, Double(series.counter.value)) }
        }
        for name in gauges.keys.sorted() {
            let family = gauges[name]!
            text.family(name, type: "gauge", help: family.help)
            for series in family.series { text.sample(name, series.labels, series.gauge.value) }
        }
        for name in histograms.keys.sorted() {
            let family = histograms[name]!
            text.family(name, type: "histogram", help: family.help)
            for series in family.series { text.histogram(name, series.labels, series.histogram.snapshot) }
        }
        for collector in collectors { collector(&text) }
        return text.output
    }
}

/// Label names to values.
public typealias Labels = [String: String]

/// A monotonically increasing count.
public final class Counter: Sendable {
    private let storage = Atomic<Int>(0)
    public init() {}
    public func increment(by amount: Int = 1) { storage.add(amount, ordering: .relaxed) }
    public var value: Int { storage.load(ordering: .relaxed) }
}

/// A value that goes up and down: a count, or a time in seconds.
public final class Gauge: Sendable {
    /// The value's IEEE 754 bits.
    private let storage = Atomic<UInt64>(0.0.bitPattern)
    public init() {}
    public func set(_ value: Double) { storage.store(value.bitPattern, ordering: .relaxed) }
    public func set(_ value: Int) { set(Double(value)) }
    /// Sets the gauge to `milliseconds` as seconds.
    public func set(milliseconds: Int64) { set(Double(milliseconds) / 1000) }
    public func add(_ amount: Int) {
        var current = storage.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + Double(amount)).bitPattern
            let (exchanged, original) = storage.compareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }
    public var value: Double { Double(bitPattern: storage.load(ordering: .relaxed)) }
}

/// Observations counted into fixed buckets, with their sum: a time in seconds, usually.
public final class Histogram: Sendable {
    /// The buckets' upper bounds, ascending.
    public let bounds: [Double]
    private let state: Mutex<Counts>

    /// What a histogram holds at one instant.
    public struct Counts: Sendable, Equatable {
        /// The buckets' upper bounds, ascending.
        public let bounds: [Double]
        /// Observations per bucket (not cumulative); the last slot holds those above every bound.
        public internal(set) var buckets: [UInt64]
        public internal(set) var count: UInt64 = 0
        public internal(set) var sum: Double = 0
    }

    public init(bounds: [Double]) {
        self.bounds = bounds
        state = Mutex(Counts(bounds: bounds, buckets: Array(repeating: 0, count: bounds.count + 1)))
    }

    /// Counts one observation of `value` (negative values count as 0).
    public func observe(_ value: Double) {
        let value = max(0, value)
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        state.withLock { counts in
            counts.buckets[index] += 1
            counts.count += 1
            counts.sum += value
        }
    }

    /// Counts the time from epoch milliseconds `start` to `end`, in seconds.
    public func observe(fromMilliseconds start: Int64, to end: Int64) { observe(Double(end - start) / 1000) }

    /// The counts now.
    public var snapshot: Counts { state.withLock { $0 } }
}

/// Builds Prometheus text: `# HELP`, `# TYPE` and samples with escaped label values.
public struct MetricsText: Sendable {
    public private(set) var output = ""

    public init() {}

    public mutating func family(_ name: String, type: String, help: String) {
        output += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    public mutating func sample(_ name: String, _ labels: Labels, _ value: Double) {
        output += name
        if !labels.isEmpty {
            output += "{"
            output += labels.keys.sorted().map { key in "\(key)=\"\(Self.escape(labels[key]!))\"" }.joined(
                separator: ",")
            output += "}"
        }
        output += " "
        output += value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        output += "\n"
    }

    /// Writes a histogram family's buckets, sum and count for one label set.
    public mutating func histogram(_ name: String, _ labels: Labels, _ histogram: LatencyHistogram) {
        self.histogram(
            name, labels,
            Histogram.Counts(
                bounds: LatencyHistogram.boundsSeconds, buckets: histogram.buckets, count: histogram.count,
                sum: Double(histogram.sumNanoseconds) / 1e9))
    }

    /// Writes a histogram family's cumulative buckets, sum and count for one label set.
    public mutating func histogram(_ name: String, _ labels: Labels, _ counts: Histogram.Counts) {
        var cumulative: UInt64 = 0
        for (index, bound) in counts.bounds.enumerated() {
            cumulative += counts.buckets[index]
            var withBound = labels
            withBound["le"] = String(bound)
            sample(name + "_bucket", withBound, Double(cumulative))
        }
        var infinity = labels
        infinity["le"] = "+Inf"
        sample(name + "_bucket", infinity, Double(counts.count))
        sample(name + "_sum", labels, counts.sum)
        sample(name + "_count", labels, Double(counts.count))
    }

    private static func escape(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}

/// A fixed-bucket latency histogram as a plain value: record on one thread, merge to render.
public struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds in seconds, from 50 µs to 10 s.
    public static let boundsSeconds: [Double] = [
        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10,
    ]
    private static let boundsNanoseconds: [UInt64] = boundsSeconds.map { UInt64($0 * 1e9) }

    /// Counts per bucket (not cumulative); the last slot holds values above every bound.
    public private(set) var buckets = [UInt64](repeating: 0, count: LatencyHistogram.boundsSeconds.count + 1)
    public private(set) var count: UInt64 = 0
    public private(set) var sumNanoseconds: UInt64 = 0

    public init() {}

    /// Records `times` observations of `nanoseconds` each.
    public mutating func record(nanoseconds: UInt64, times: UInt64 = 1) {
        var index = 0
        let bounds = Self.boundsNanoseconds
        while index < bounds.count && nanoseconds > bounds[index] { index += 1 }
        buckets[index] += times
        count += times
        sumNanoseconds &+= nanoseconds &* times
    }

    public mutating func merge(_ other: LatencyHistogram) {
        for index in buckets.indices { buckets[index] += other.buckets[index] }
        count += other.count
        sumNanoseconds &+= other.sumNanoseconds
    }
}
