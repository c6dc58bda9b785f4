import TOML

/// Our parse results in toml-test's JSON shape: scalars as
/// {"type": ..., "value": ...}, arrays as arrays, tables as objects.
/// Date-times are rendered like Python's isoformat() (microseconds, "+00:00"
/// for Z) so they compare with the oracle's text, and floats are compared
/// by value, as toml-test itself does.
enum TaggedJSON {
    static func encode(_ table: TOMLTable) -> JSON {
        .object(table.entries.map { ($0.key, encode($0.value)) })
    }

    static func encode(_ value: TOMLValue) -> JSON {
        switch value.kind {
        case .string(let string): return scalar("string", string)
        case .integer(let integer): return scalar("integer", String(integer))
        case .float(let double):
            if double.isNaN { return scalar("float", "nan") }
            if double.isInfinite { return scalar("float", double < 0 ? "-inf" : "inf") }
            return scalar("float", "\(double)")
        case .boolean(let bool): return scalar("bool", bool ? "true" : "false")
        case .dateTime(let dateTime): return encode(dateTime)
        case .array(let items): return .array(items.map(encode))
        case .table(let table): return encode(table)
        }
    }

    static func encode(_ dateTime: TOMLDateTime) -> JSON {
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var date = ""
        if let day = dateTime.date {
            let year = String(day.year)
            date = String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + two(day.month) + "-" + two(day.day)
        }
        var time = ""
        if let clock = dateTime.time {
            time = two(clock.hour) + ":" + two(clock.minute) + ":" + two(clock.second)
            let micro = clock.nanosecond / 1000
            if micro != 0 {
                let digits = String(micro)
                time += "." + String(repeating: "0", count: 6 - digits.count) + digits
            }
        }
        switch dateTime.kind {
        case .offsetDateTime:
            let minutes = dateTime.offsetMinutes ?? 0
            let sign = minutes < 0 ? "-" : "+"
            return scalar("datetime", date + "T" + time + sign + two(abs(minutes) / 60) + ":" + two(abs(minutes) % 60))
        case .localDateTime: return scalar("datetime-local", date + "T" + time)
        case .localDate: return scalar("date-local", date)
        case .localTime: return scalar("time-local", time)
        }
    }

    private static func scalar(_ type: String, _ value: String) -> JSON {
        .object([("type", .string(type)), ("value", .string(value))])
    }

    /// The first difference between two tagged documents, described with its
    /// key path, or nil if they mean the same. Key order must match too.
    static func difference(ours: JSON, theirs: JSON, path: String = "") -> String? {
        switch (ours, theirs) {
        case let (.array(a), .array(b)):
            if a.count != b.count { return "\(path): array of \(a.count) vs \(b.count) elements" }
            for (index, (x, y)) in zip(a, b).enumerated() {
                if let difference = difference(ours: x, theirs: y, path: "\(path)[\(index)]") { return difference }
            }
            return nil
        case let (.object(a), .object(b)):
            if isScalar(ours) && isScalar(theirs) {
                return scalarDifference(ours, theirs, path: path)
            }
            let ourKeys = a.map(\.0), theirKeys = b.map(\.0)
            if ourKeys != theirKeys { return "\(path): keys \(ourKeys) vs \(theirKeys)" }
            for ((key, x), (_, y)) in zip(a, b) {
                if let difference = difference(ours: x, theirs: y, path: path + "." + key) { return difference }
            }
            return nil
        default:
            return "\(path): \(ours) vs \(theirs)"
        }
    }

    private static func isScalar(_ json: JSON) -> Bool {
        guard case .object(let pairs) = json, pairs.count == 2 else { return false }
        return pairs[0].0 == "type" && pairs[1].0 == "value" && json["type"]?.stringValue != nil && json["value"]?.stringValue != nil
    }

    private static func scalarDifference(_ ours: JSON, _ theirs: JSON, path: String) -> String? {
        let ourType = ours["type"]?.stringValue, theirType = theirs["type"]?.stringValue
        let ourValue = ours["value"]?.stringValue ?? "", theirValue = theirs["value"]?.stringValue ?? ""
        guard ourType == theirType else { return "\(path): \(ours) vs \(theirs)" }
        if ourType == "float" {
            guard let x = Double(ourValue), let y = Double(theirValue) else { return "\(path): unreadable float \(ourValue) vs \(theirValue)" }
            if x.isNaN && y.isNaN { return nil }
            return x.bitPattern == y.bitPattern ? nil : "\(path): float \(ourValue) vs \(theirValue)"
        }
        return ourValue == theirValue ? nil : "\(path): \(ours) vs \(theirs)"
    }
}
