import Testing
import TOML

@Suite struct DateTimeTests {
    private func dateTime(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> TOMLDateTime {
        try #require(try parseValid("v = " + text, sourceLocation: sourceLocation)["v"]?.dateTime, sourceLocation: sourceLocation)
    }

    @Test func offsetDateTime() throws {
        let value = try dateTime("1979-05-27T00:32:00.999999-07:30")
        #expect(value.kind == .offsetDateTime)
        #expect(value.date == TOMLDate(year: 1979, month: 5, day: 27))
        #expect(value.time == TOMLTime(hour: 0, minute: 32, second: 0, nanosecond: 999_999_000))
        #expect(value.offsetMinutes == -450)
        #expect(value.text == "1979-05-27T00:32:00.999999-07:30")
        #expect(TOMLValueKind.dateTime(value).typeName == "offset date-time")
    }

    @Test func utcSpellings() throws {
        for text in ["1979-05-27T07:32:00Z", "1979-05-27t07:32:00z", "1979-05-27 07:32:00Z", "1979-05-27T07:32:00+00:00", "1979-05-27T07:32:00-00:00"] {
            let value = try dateTime(text)
            #expect(value.offsetMinutes == 0)
            #expect(value.text == text)
        }
    }

    @Test func localKinds() throws {
        let dateTimeValue = try dateTime("1979-05-27 07:32:00")
        #expect(dateTimeValue.kind == .localDateTime)
        #expect(dateTimeValue.offsetMinutes == nil)
        let date = try dateTime("1979-05-27")
        #expect(date.kind == .localDate)
        #expect(date.time == nil)
        let time = try dateTime("07:32:01.5")
        #expect(time.kind == .localTime)
        #expect(time.date == nil)
        #expect(time.time == TOMLTime(hour: 7, minute: 32, second: 1, nanosecond: 500_000_000))
        #expect(TOMLValueKind.dateTime(dateTimeValue).typeName == "local date-time")
        #expect(TOMLValueKind.dateTime(date).typeName == "local date")
        #expect(TOMLValueKind.dateTime(time).typeName == "local time")
    }

    @Test func fractionIsTruncatedToNanoseconds() throws {
        #expect(try dateTime("00:00:00.123456789987").time?.nanosecond == 123_456_789)
        #expect(try dateTime("00:00:00.1").time?.nanosecond == 100_000_000)
        #expect(try dateTime("00:00:00.000000001").time?.nanosecond == 1)
    }

    @Test func leapYears() throws {
        #expect(try dateTime("2000-02-29").date?.day == 29)
        #expect(try dateTime("2024-02-29").date?.day == 29)
        expectError("v = 1900-02-29", at: 1, 5, "February 1900 has 28 days")
        expectError("v = 2023-02-29", at: 1, 5, "February 2023 has 28 days")
    }

    /// RFC 3339 allows year 0000 (Python's tomllib does not, so this corner
    /// is pinned here rather than in the differential tests).
    @Test func yearZeroIsAllowed() throws {
        #expect(try dateTime("0000-01-01").date == TOMLDate(year: 0, month: 1, day: 1))
        #expect(try dateTime("0000-02-29").date?.day == 29)
    }

    @Test func dateFollowedBySpaceAndComment() throws {
        let table = try parseValid("d = 1979-05-27 # comment\nt = 1979-05-27 \n")
        #expect(table["d"]?.dateTime?.kind == .localDate)
        #expect(table["t"]?.dateTime?.text == "1979-05-27")
    }

    @Test func rangeErrors() {
        expectError("v = 2024-13-01", at: 1, 5, "the month must be between 01 and 12")
        expectError("v = 2024-04-31", at: 1, 5, "April 2024 has 30 days")
        expectError("v = 24:00:00", at: 1, 5, "the hour must be between 00 and 23")
        expectError("v = 23:60:00", at: 1, 5, "the minute must be between 00 and 59")
        expectError("v = 23:59:60", at: 1, 5, "the seconds must be between 00 and 59")
        expectError("v = 2024-01-01T00:00:00+24:00", at: 1, 24, "invalid UTC offset +24:00")
    }

    @Test func shapeErrors() {
        expectError("v = 07:32", at: 1, 10, "TOML 1.0 requires HH:MM:SS")
        expectError("v = 07:32:00Z", at: 1, 13, "a local time cannot have a UTC offset")
        expectError("v = 1979-05-27T", at: 1, 16, "expected a two-digit hour")
        expectError("v = 1979-5-27", at: 1, 11, "expected a two-digit month, found '-'")
        expectError("v = 1979-05-27T07:32:00.", at: 1, 25, "expected digits after the decimal point")
        expectError("v = 1979-05-27T07:32:00+0700", at: 1, 27, "expected ':' in the UTC offset")
    }
}
