package httpdate_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/layers/retry/internal/httpdate"
)

// ExampleParse shows Parse on header values taken from an http.Header.
func ExampleParse() {
	now := time.Date(2026, time.October, 10, 0, 0, 0, 0, time.UTC)
	for _, v := range []string{"120", "Sat, 10 Oct 2026 00:00:02 GMT", "1.5"} {
		h := http.Header{}
		h.Set("Retry-After", v)
		r := httpdate.Parse(h.Values("Retry-After"), now)
		fmt.Println(r.Kind, r.Delay)
	}
	fmt.Println(httpdate.Parse(http.Header{}.Values("Retry-After"), now).Kind)
	// Output:
	// seconds 2m0s
	// date 2s
	// invalid 0s
	// absent
}

// ExampleParseHTTPDate shows the two-digit-year rule and the weekday check.
func ExampleParseHTTPDate() {
	now := time.Date(2026, time.October, 10, 0, 0, 0, 0, time.UTC)
	t, ok := httpdate.ParseHTTPDate("Tuesday, 01-Jan-80 00:00:00 GMT", now)
	fmt.Println(t, ok)
	_, ok = httpdate.ParseHTTPDate("Fri, 10 Oct 2026 00:00:02 GMT", now) // 10 Oct 2026 is a Saturday
	fmt.Println(ok)
	// Output:
	// 1980-01-01 00:00:00 +0000 UTC true
	// false
}

// ExampleParseMillis shows the millisecond retry hints as OpenAI and Azure
// OpenAI send them.
func ExampleParseMillis() {
	h := http.Header{}
	h.Set("retry-after-ms", "1500")
	h.Set("x-ms-retry-after-ms", "12.5")
	for _, name := range []string{"retry-after-ms", "x-ms-retry-after-ms", "x-absent"} {
		v := httpdate.ParseMillis(h.Values(name))
		fmt.Println(name, v.Kind, v.Delay)
	}
	fmt.Println(httpdate.ParseMillis([]string{"-5"}).Kind)
	// Output:
	// retry-after-ms milliseconds 1.5s
	// x-ms-retry-after-ms milliseconds 12.5ms
	// x-absent absent 0s
	// invalid
}
