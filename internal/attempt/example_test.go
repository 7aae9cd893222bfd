package attempt_test

import (
	"fmt"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/internal/attempt"
)

// New is the per-attempt state wire-plane layers reach with From; Begin runs the attempt_started notification once.
func ExampleNew() {
	a := attempt.New(event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, func() error {
		fmt.Println("attempt_started")
		return nil
	})
	_ = a.Begin()
	_ = a.Begin()
	a.Received([]byte("12345"))
	fmt.Println(a.Progress().RawBytes)
	// Output:
	// attempt_started
	// 5
}

// starts counts the attempts that began; it is the attempts' Beginner.
type starts struct{ n int }

func (s *starts) BeginAttempt() error {
	s.n++
	return nil
}

// A caller that keeps per-call state notifies it directly: the state is
// every attempt's Beginner, so no method value is made per attempt.
func ExampleNewFor() {
	s := &starts{}
	for n := 1; n <= 2; n++ {
		a := attempt.NewFor(event.Identity{WireAttempt: n}, codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, s)
		_ = a.Begin()
		_ = a.Begin() // idempotent: BeginAttempt ran once for this attempt
	}
	fmt.Println(s.n)
	// Output:
	// 2
}

// A caller that keeps per-call state keeps the first attempt in it too,
// and allocates only the attempts after it.
func ExampleInitFor() {
	type callState struct {
		starts
		first attempt.Attempt
	}
	c := &callState{}
	a := attempt.InitFor(&c.first, event.Identity{WireAttempt: 1}, codec.RequestInfo{Operation: codec.Ordinary}, nil, nil, &c.starts)
	_ = a.Begin()
	a.Received([]byte("hello"))
	fmt.Println(a == &c.first, c.n, a.Progress().RawBytes)
	// Output:
	// true 1 5
}
