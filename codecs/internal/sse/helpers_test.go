package sse

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// The helpers below keep the tests free of third-party dependencies.

// msg formats optional context for a failure message.
func msg(msgAndArgs []any) string {
	if len(msgAndArgs) == 0 {
		return ""
	}
	if f, ok := msgAndArgs[0].(string); ok {
		return " (" + fmt.Sprintf(f, msgAndArgs[1:]...) + ")"
	}
	return fmt.Sprint(msgAndArgs...)
}

// equal reports an error unless want and got are deeply equal.
func equal(t testing.TB, want, got any, msgAndArgs ...any) bool {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return true
	}
	t.Errorf("not equal%s:\nwant: %#v\n got: %#v", msg(msgAndArgs), want, got)
	return false
}

// check reports an error unless cond holds.
func check(t testing.TB, cond bool, msgAndArgs ...any) {
	t.Helper()
	if !cond {
		t.Errorf("check failed%s", msg(msgAndArgs))
	}
}

// need stops the test unless cond holds.
func need(t testing.TB, cond bool, msgAndArgs ...any) {
	t.Helper()
	if !cond {
		t.Fatalf("requirement failed%s", msg(msgAndArgs))
	}
}

// noErr stops the test if err is not nil.
func noErr(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error%s: %v", msg(msgAndArgs), err)
	}
}

// frameErr stops the test unless err is a *FrameError, which it returns.
func frameErr(t testing.TB, err error, msgAndArgs ...any) *FrameError {
	t.Helper()
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("want *FrameError%s, got %v", msg(msgAndArgs), err)
	}
	return fe
}
