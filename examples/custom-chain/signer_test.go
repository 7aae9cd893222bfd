package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layer/layertest"
)

// The signer keeps the layer contract: pass-through, errors passed up, the
// caller's request unchanged, safe for concurrent use.
func TestSignerContract(t *testing.T) {
	layertest.Layer(t, NewSigner([]byte("layertest key")))
	assert.Equal(t, layer.PerAttempt, NewSigner(nil).Position())
}

// expectedSignature recomputes the signature the way a gateway documents
// it, independently of the example's own helper.
func expectedSignature(key []byte, method, path, attemptID string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(method + "\n" + path + "\n" + attemptID + "\n"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Through the chain every wire attempt is signed afresh: the gateway
// accepts both attempts of a 503 → 200 call, each signature verifies under
// the key for its own attempt ID, and the two attempts carry different
// attempt IDs and signatures over the same body.
func TestSignerSignsEachAttempt(t *testing.T) {
	key := []byte("test signing key")
	gw := newGateway(key, busyThenHello()...)
	t.Cleanup(gw.Close)
	var started []event.Identity
	ch, err := buildChain(nil, key, func(ev event.Event) error {
		if ev.Type == event.AttemptStarted {
			started = append(started, ev.Identity)
		}
		return nil
	})
	require.NoError(t, err)
	cl, err := client.New(gw.URL, ch, client.WithAPIKey("sk-test"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	comp, err := cl.Complete(ctx, helloRequest())

	require.NoError(t, err)
	assert.Equal(t, "hello", comp.Message.Content)
	got := gw.Received()
	require.Len(t, got, 2)
	require.Len(t, started, 2)
	for i, r := range got {
		assert.Empty(t, r.Problem, "attempt %d was refused", i+1)
		assert.Equal(t, started[i].AttemptID, r.AttemptID, "attempt %d: X-Signature-Attempt is the attempt's own ID", i+1)
		assert.Equal(t, expectedSignature(key, http.MethodPost, "/openai/v1/chat", r.AttemptID, r.Body), r.Signature, "attempt %d", i+1)
	}
	assert.NotEqual(t, got[0].AttemptID, got[1].AttemptID)
	assert.NotEqual(t, got[0].Signature, got[1].Signature)
	assert.Equal(t, got[0].Body, got[1].Body, "recourse sends the same body on every attempt")
	assert.Equal(t, started[0].LogicalID, started[1].LogicalID)
}

// A request signed with another key is refused by the gateway with a 401,
// which is never retried: one POST, and the native client's typed error.
func TestSignerWrongKeyIsRefused(t *testing.T) {
	gw := newGateway([]byte("the gateway's key"), busyThenHello()...)
	t.Cleanup(gw.Close)
	ch, err := buildChain(nil, []byte("another key"), nil)
	require.NoError(t, err)
	cl, err := client.New(gw.URL, ch)
	require.NoError(t, err)

	_, err = cl.Complete(context.Background(), helloRequest())

	var rerr *layer.RecoveryError
	require.True(t, errors.As(err, &rerr), "got %T: %v", err, err)
	assert.Equal(t, event.OutcomeInterrupted, rerr.Outcome)
	assert.Equal(t, http.StatusUnauthorized, rerr.Failure.HTTPStatus)
	got := gw.Received()
	require.Len(t, got, 1)
	assert.Equal(t, "bad signature", got[0].Problem)
}

// The gateway refuses a replayed attempt: the check the attempt ID makes
// possible. (The chain never replays; this sends the same signed request
// twice by hand.)
func TestGatewayRefusesAReplay(t *testing.T) {
	key := []byte("k")
	gw := newGateway(key, busyThenHello()...)
	t.Cleanup(gw.Close)
	body := []byte(`{"model":"m","messages":[]}`)
	sig := expectedSignature(key, http.MethodPost, "/openai/v1/chat", "attempt-1", body)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, gw.URL+"/openai/v1/chat", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set(SignatureHeader, sig)
		req.Header.Set(SignatureAttemptHeader, "attempt-1")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	got := gw.Received()
	require.Len(t, got, 2)
	assert.Equal(t, "", got[0].Problem)
	assert.Equal(t, http.StatusServiceUnavailable, got[0].Status)
	assert.Equal(t, "replayed attempt", got[1].Problem)
	assert.Equal(t, http.StatusUnauthorized, got[1].Status)
}

// Outside an engine the signer signs with an empty attempt ID and sends no
// attempt header; it reads the body through GetBody, so the next layer
// still reads the whole body, and it leaves the caller's request as it
// was. A request without GetBody is signed too: the signer reads its body
// and hands the same bytes on.
func TestSignerOutsideAnEngine(t *testing.T) {
	key := []byte("k")
	body := []byte(`{"model":"m"}`)
	for _, tc := range []struct {
		name    string
		getBody bool
	}{{"with GetBody", true}, {"without GetBody", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var seen *http.Request
			var seenBody []byte
			rt := NewSigner(key).Wrap(layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
				seen = req
				seenBody, _ = io.ReadAll(req.Body)
				req.Body.Close()
				return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
			}))
			req, err := http.NewRequest(http.MethodPost, "http://gateway.example/openai/v1/chat?debug=1", bytes.NewReader(body))
			require.NoError(t, err)
			if !tc.getBody {
				req.GetBody = nil
				req.Body = io.NopCloser(bytes.NewReader(body))
			}
			req.Header.Set("Authorization", "Bearer sk-test")

			resp, err := rt.RoundTrip(req)

			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, body, seenBody)
			assert.Equal(t, expectedSignature(key, http.MethodPost, "/openai/v1/chat", "", body), seen.Header.Get(SignatureHeader))
			assert.Empty(t, seen.Header.Values(SignatureAttemptHeader))
			assert.Equal(t, "Bearer sk-test", seen.Header.Get("Authorization"))
			assert.NotSame(t, req, seen)
			assert.Empty(t, req.Header.Get(SignatureHeader), "the caller's request was changed")
			assert.Len(t, req.Header, 1)
		})
	}
}

// A body that cannot be read is an error, passed up, and nothing is sent.
func TestSignerBodyError(t *testing.T) {
	called := false
	rt := NewSigner([]byte("k")).Wrap(layer.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
		called = true
		return nil, errors.New("must not be called")
	}))
	req, err := http.NewRequest(http.MethodPost, "http://gateway.example/openai/v1/chat", strings.NewReader("{}"))
	require.NoError(t, err)
	boom := errors.New("body unavailable")
	req.GetBody = func() (io.ReadCloser, error) { return nil, boom }

	resp, err := rt.RoundTrip(req)

	assert.Nil(t, resp)
	assert.ErrorIs(t, err, boom)
	assert.False(t, called)
}
