package layer_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/recourse-dev/recourse/codec"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
)

// NewPolicyError names the field, never the value.
func ExampleNewPolicyError() {
	err := layer.NewPolicyError("BaseDelay")
	fmt.Println(err)
	// Output:
	// recourse: invalid recovery policy field BaseDelay (RECOVERY_POLICY_ERROR)
}

// NewRecoveryError's text and JSON are safe to log; private evidence is
// reached only through Inspect.
func ExampleNewRecoveryError() {
	f := event.Failure{
		Identity: event.Identity{LogicalID: "5d1c2a40-0000-4000-8000-000000000000", WireAttempt: 3},
		Provider: codec.OpenAI, Operation: codec.Ordinary, Category: event.CategoryHTTP, HTTPStatus: 503,
		Acceptance: event.AcceptanceUnknown, Classification: event.Classification{Eligible: true, Reason: event.ReasonTransient},
	}
	f.Attach(event.Evidence{Bytes: []byte(`{"error":{"message":"secret prompt echoed"}}`)})
	err := layer.NewRecoveryError(event.OutcomeExhausted, f, []event.Failure{f}, nil)
	fmt.Println(err)
	b, _ := json.Marshal(err)
	fmt.Println(len(b) > 0, string(event.Inspect(&err.Failure).Bytes) != "")
	// Output:
	// recourse: recovery exhausted (http/transient, HTTP 503, wire attempt 3)
	// true true
}

// A caller that has just encoded a request body hands it to the chain as a
// RequestBody, so that the engine keeps those bytes instead of copying them.
func ExampleNewRequestBody() {
	body := []byte(`{"model":"gpt-4o-mini","messages":[]}`)
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", nil)
	if err != nil {
		panic(err)
	}
	req.Body = layer.NewRequestBody(body)
	req.ContentLength = int64(len(body))
	rb := req.Body.(*layer.RequestBody)
	fmt.Println(len(rb.Unread()), string(rb.Unread()[:9]))
	// Output:
	// 37 {"model":
}

// FormatDelay shows a wait the way notices do.
func ExampleFormatDelay() {
	fmt.Println(layer.FormatDelay(800 * time.Millisecond))
	fmt.Println(layer.FormatDelay(1249 * time.Millisecond))
	fmt.Println(layer.FormatDelay(2 * time.Second))
	// Output:
	// 800ms
	// 1.2s
	// 2.0s
}

// Declare builds a codec's capability declaration one value at a time;
// WithBasis gives each value its reason while the endpoint, documentation
// and inspection date are written once.
func ExampleCapabilities_Declare() {
	doc := codec.CapabilityEvidence{
		Endpoint:         "POST /v1/chat",
		DocumentationURL: "https://gateway.example/docs/chat",
		InspectedOn:      "2026-12-01",
	}
	var caps codec.Capabilities
	caps.Declare(codec.ClientAbort, codec.Unknown, doc.WithBasis("The page does not say what a disconnect does."))
	fmt.Println(caps.Get(codec.ClientAbort), caps.Validate() != nil)
	caps.Declare(codec.RequestCancellation, codec.Unsupported, doc.WithBasis("No cancel endpoint is documented."))
	caps.Declare(codec.RequestStatus, codec.Unsupported, doc.WithBasis("No status endpoint is documented."))
	caps.Declare(codec.Idempotency, codec.Unsupported, doc.WithBasis("No idempotency key is documented."))
	caps.Declare(codec.ExactAttemptTermination, codec.Unknown, doc.WithBasis("Nothing ties an abort to the end of inference."))
	fmt.Println(caps.Validate(), caps.Evidence[codec.Idempotency].Basis)
	// Output:
	// unknown true
	// <nil> No idempotency key is documented.
}

// CredentialHeaders lists the headers that carry a credential of the
// caller's account; a layer that sends a request elsewhere removes them.
func ExampleCredentialHeaders() {
	h := http.Header{}
	h.Set("Authorization", "Bearer sk-example")
	h.Set("Content-Type", "application/json")
	for _, name := range layer.CredentialHeaders() {
		h.Del(name)
	}
	fmt.Println(len(h), h.Get("Content-Type"), layer.APIKeyHeaders())
	// Output:
	// 1 application/json [Authorization Api-Key X-Api-Key X-Goog-Api-Key]
}

// A fallback leaves a target at once on the stall limits of a set.
func ExampleStallSetOf() {
	s := layer.StallSetOf(event.StallHeader, event.StallFirstOutput)
	fmt.Println(s.Has(event.StallHeader), s.Has(event.StallIdle), s.Has("slow"))
	// Output: true false false
}
