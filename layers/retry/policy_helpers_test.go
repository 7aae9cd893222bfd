package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/retry"
)

func TestR6_1_PolicyDelayUsesDefaultsAndOneSample(t *testing.T) {
	p := retry.Policy{Jitter: func() float64 { return 1 }}
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 20: 30 * time.Second} {
		if got, err := p.Delay(n); err != nil || got != want {
			t.Errorf("Delay(%d) = %v, %v; want %v", n, got, err, want)
		}
	}
	for name, j := range map[string]func() float64{"out of range": func() float64 { return 2 }, "panic": func() float64 { panic("x") }} {
		bad := retry.Policy{Jitter: j}
		var pe *layer.PolicyError
		if _, err := bad.Delay(1); !errors.As(err, &pe) || pe.Field != "Jitter" {
			t.Errorf("%s: Delay error = %v, want a PolicyError for Jitter", name, err)
		}
	}
}

func TestR9_1_PolicyWaitHonoursContextAndHooks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var p retry.Policy
	if err := p.Wait(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context = %v", err)
	}
	p.Sleep = func(context.Context, time.Duration) error { panic("broken sleep") }
	var pe *retry.PanicError
	if err := p.Wait(context.Background(), time.Second); !errors.As(err, &pe) || pe.Value != "broken sleep" {
		t.Fatalf("a panicking Sleep = %v, want *retry.PanicError", err)
	}
	when := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	p.WallClock = func() time.Time { return when }
	if !p.Now().Equal(when) {
		t.Fatal("Now uses the policy's WallClock")
	}
}
