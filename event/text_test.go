package event_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/recourse-dev/recourse/event"
)

// R21.6: one safe failure text for every surface, the broker's wording.
func TestR21_6_FailureText(t *testing.T) {
	cases := []struct {
		f    *event.Failure
		want string
	}{
		{nil, "error"},
		{&event.Failure{}, "error"},
		{&event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503}, "HTTP 503"},
		{&event.Failure{Category: event.CategoryHTTP}, "HTTP error"},
		{&event.Failure{Category: event.CategoryTransport}, "transport error"},
		{&event.Failure{Category: event.CategoryClientTimeout}, "client timeout"},
		{&event.Failure{Category: event.CategoryProviderResponse}, "provider error"},
		{&event.Failure{Category: event.CategoryProtocol}, "protocol error"},
		{&event.Failure{Category: event.CategoryCancellation}, "cancelled"},
		{&event.Failure{Category: event.CategoryCancellation, Stall: event.StallIdle}, "cancelled"},
		{&event.Failure{Category: event.CategoryTransport, Stall: event.StallHeader}, "header timeout"},
		{&event.Failure{Category: event.CategoryHTTP, HTTPStatus: 503, Stall: event.StallIdle}, "idle timeout"},
		{&event.Failure{Category: event.CategoryTransport, Stall: "custom"}, "stall"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.f.Text(), "%+v", c.f)
	}
}

func TestQuotaRefusalText(t *testing.T) {
	for _, tc := range []struct {
		r    *event.QuotaRefusal
		want string
	}{
		{&event.QuotaRefusal{Upstream: "api.openai.com", Resends: 14, Window: time.Minute}, "retry quota for api.openai.com exhausted: 14 resends in the last 60 s"},
		{&event.QuotaRefusal{Upstream: "127.0.0.1:11434", Resends: 1, Window: 1500 * time.Millisecond, Fleet: true}, "fleet retry quota for 127.0.0.1:11434 exhausted: 1 resend in the last 1500 ms"},
		{nil, "retry quota exhausted"},
	} {
		assert.Equal(t, tc.want, tc.r.Text())
	}
}
