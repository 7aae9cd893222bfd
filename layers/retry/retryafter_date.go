package retry

import "time"

// shortDays holds the IMF-fixdate and asctime day-names, indexed by
// time.Weekday.
var shortDays = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

// longDays holds the RFC 850 day-names, indexed by time.Weekday.
var longDays = [7]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

// months holds the month names; months[i] is time.Month(i+1).
var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// Lengths of the fixed-width forms.
const (
	imfLen     = len("Sun, 06 Nov 1994 08:49:37 GMT")
	asctimeLen = len("Sun Nov  6 08:49:37 1994")
	// rfc850Tail is the length of an RFC 850 date after its day-name.
	rfc850Tail = len(", 06-Nov-94 08:49:37 GMT")
)

// parseHTTPDate parses s as one HTTP-date in IMF-fixdate, RFC 850 or asctime
// form, strictly, and returns the instant in UTC. The time now is used only
// to resolve the two-digit year of an RFC 850 date. It reports ok=false, with
// the zero time, if s is not exactly one valid HTTP-date; surrounding
// whitespace is not accepted.
func parseHTTPDate(s string, now time.Time) (t time.Time, ok bool) {
	switch {
	case len(s) == imfLen && s[3] == ',':
		return parseIMFFixdate(s)
	case len(s) == asctimeLen && s[3] == ' ':
		return parseAsctime(s)
	case len(s) > rfc850Tail:
		return parseRFC850(s, now)
	}
	return time.Time{}, false
}

// parseIMFFixdate parses "Sun, 06 Nov 1994 08:49:37 GMT".
func parseIMFFixdate(s string) (time.Time, bool) {
	if len(s) != imfLen ||
		s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
		s[16] != ' ' || s[25] != ' ' || s[26:] != "GMT" {
		return time.Time{}, false
	}
	wd, ok1 := lookupWeekday(s[0:3], &shortDays)
	day, ok2 := twoDigits(s[5:7])
	mon, ok3 := lookupMonth(s[8:11])
	year, ok4 := fourDigits(s[12:16])
	h, m, sec, ok5 := clock(s[17:25])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return time.Time{}, false
	}
	return build(year, mon, day, h, m, sec, wd)
}

// parseAsctime parses "Sun Nov  6 08:49:37 1994".
func parseAsctime(s string) (time.Time, bool) {
	if len(s) != asctimeLen ||
		s[3] != ' ' || s[7] != ' ' || s[10] != ' ' || s[19] != ' ' {
		return time.Time{}, false
	}
	wd, ok1 := lookupWeekday(s[0:3], &shortDays)
	mon, ok2 := lookupMonth(s[4:7])
	var day int
	var ok3 bool
	if s[8] == ' ' {
		// ( SP DIGIT )
		if isDigit(s[9]) {
			day, ok3 = int(s[9]-'0'), true
		}
	} else {
		// 2DIGIT
		day, ok3 = twoDigits(s[8:10])
	}
	h, m, sec, ok4 := clock(s[11:19])
	year, ok5 := fourDigits(s[20:24])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return time.Time{}, false
	}
	return build(year, mon, day, h, m, sec, wd)
}

// parseRFC850 parses "Sunday, 06-Nov-94 08:49:37 GMT", resolving the
// two-digit year relative to now.
func parseRFC850(s string, now time.Time) (time.Time, bool) {
	if len(s) <= rfc850Tail {
		return time.Time{}, false
	}
	name, r := s[:len(s)-rfc850Tail], s[len(s)-rfc850Tail:]
	if r[0] != ',' || r[1] != ' ' || r[4] != '-' || r[8] != '-' ||
		r[11] != ' ' || r[20] != ' ' || r[21:] != "GMT" {
		return time.Time{}, false
	}
	wd, ok1 := lookupWeekday(name, &longDays)
	day, ok2 := twoDigits(r[2:4])
	mon, ok3 := lookupMonth(r[5:8])
	yy, ok4 := twoDigits(r[9:11])
	h, m, sec, ok5 := clock(r[12:20])
	if !(ok1 && ok2 && ok3 && ok4 && ok5) {
		return time.Time{}, false
	}
	now = now.UTC()
	year := floorDiv(now.Year(), 100)*100 + yy
	// time.Date normalises an impossible day (such as 31 Feb) here; that is
	// harmless because build rejects it below, after the century is chosen.
	candidate := time.Date(year, mon, day, h, m, sec, 0, time.UTC)
	if candidate.After(now.AddDate(50, 0, 0)) {
		year -= 100
	}
	return build(year, mon, day, h, m, sec, wd)
}

// build validates the calendar fields and the weekday and returns the UTC
// instant they denote. The clock fields are assumed already range-checked.
func build(year int, mon time.Month, day, h, m, sec int, wd time.Weekday) (time.Time, bool) {
	if day < 1 || day > daysIn(mon, year) {
		return time.Time{}, false
	}
	t := time.Date(year, mon, day, h, m, sec, 0, time.UTC)
	if t.Weekday() != wd {
		return time.Time{}, false
	}
	return t, true
}

// clock parses "HH:MM:SS" with hours 00-23, minutes 00-59 and seconds 00-59.
func clock(s string) (h, m, sec int, ok bool) {
	if len(s) != 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, false
	}
	h, ok1 := twoDigits(s[0:2])
	m, ok2 := twoDigits(s[3:5])
	sec, ok3 := twoDigits(s[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || sec > 59 {
		return 0, 0, 0, false
	}
	return h, m, sec, true
}

// twoDigits parses exactly two ASCII digits.
func twoDigits(s string) (int, bool) {
	if len(s) != 2 || !isDigit(s[0]) || !isDigit(s[1]) {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// fourDigits parses exactly four ASCII digits.
func fourDigits(s string) (int, bool) {
	if len(s) != 4 {
		return 0, false
	}
	hi, ok1 := twoDigits(s[0:2])
	lo, ok2 := twoDigits(s[2:4])
	return hi*100 + lo, ok1 && ok2
}

// lookupWeekday matches s exactly and case-sensitively against names.
func lookupWeekday(s string, names *[7]string) (time.Weekday, bool) {
	for i, n := range names {
		if s == n {
			return time.Weekday(i), true
		}
	}
	return 0, false
}

// lookupMonth matches s exactly and case-sensitively against the month names.
func lookupMonth(s string) (time.Month, bool) {
	for i, n := range months {
		if s == n {
			return time.Month(i + 1), true
		}
	}
	return 0, false
}

// daysIn returns the number of days in month mon of the proleptic Gregorian
// year.
func daysIn(mon time.Month, year int) int {
	switch mon {
	case time.February:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// floorDiv returns a/b rounded towards negative infinity, for b > 0.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
