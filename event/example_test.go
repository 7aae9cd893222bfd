package event_test

import (
	"errors"
	"fmt"

	"github.com/recourse-dev/recourse/event"
)

// Failure.Text is the safe short text of a failure that notices show.
func ExampleFailure_Text() {
	f := &event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503}
	fmt.Println(f.Text())
	fmt.Println((&event.Failure{Category: event.CategoryTransport, Stall: event.StallIdle}).Text())
	var none *event.Failure
	fmt.Println(none.Text())
	// Output:
	// HTTP 503
	// idle timeout
	// error
}

// Inspect is the one way to the private evidence behind a failure; a
// failure without any has none.
func ExampleInspect() {
	f := &event.Failure{Category: event.CategoryTransport}
	fmt.Println(event.Inspect(f) == nil)
	f.Attach(event.Evidence{Cause: errors.New("connection reset by peer")})
	fmt.Println(event.Inspect(f).Cause)
	// Output:
	// true
	// connection reset by peer
}
