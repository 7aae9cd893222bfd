package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/recourse-dev/recourse/layer"
)

// The headers the signer adds to every wire attempt.
const (
	// SignatureHeader carries the hex HMAC-SHA256 of the attempt (see
	// NewSigner for what is signed).
	SignatureHeader = "X-Signature"
	// SignatureAttemptHeader carries the attempt ID the signature covers.
	SignatureAttemptHeader = "X-Signature-Attempt"
)

// NewSigner returns a per-attempt layer, named "signer", that signs every
// wire attempt with key. It runs inside the engine, so a resend is signed
// afresh: each attempt gets X-Signature-Attempt, the attempt's own ID from
// layer.AttemptFrom, and X-Signature, the hex HMAC-SHA256 under key of
//
//	method "\n" path "\n" attempt ID "\n" body
//
// where path is the URL path without the query and body is read through
// the request's GetBody (the engine sets it), so the body the next layer
// sends is left unread. The signature therefore differs per attempt even
// though recourse sends the same body, and a server that keeps the attempt
// IDs it accepted can refuse a replayed request while accepting a resend.
// The attempt ID tells the server nothing about idempotency: two attempts
// may both run inference.
//
// The layer clones the request before adding the headers and never changes
// the caller's. Outside an engine (no attempt in the context) it signs with
// an empty attempt ID and sends no X-Signature-Attempt. The headers are
// added below the capture stage, so OnWire snapshots never hold them, and
// recourse itself still sends no identity header (R2.4): sending the
// attempt ID is this layer's choice. A nil or empty key is allowed but signs
// with an empty key, which proves nothing. The key is copied; the layer is
// safe for concurrent use.
func NewSigner(key []byte) layer.Layer {
	key = bytes.Clone(key)
	return layer.NewPerAttempt("signer", func(next http.RoundTripper) http.RoundTripper {
		return layer.RoundTripperFunc(func(req *http.Request) (*http.Response, error) {
			body, err := signedBody(req)
			if err != nil {
				closeBody(req)
				return nil, err
			}
			attemptID := ""
			if a := layer.AttemptFrom(req.Context()); a != nil {
				attemptID = a.Identity().AttemptID
			}
			out := req.Clone(req.Context()) // a deep copy of the header: req stays as it was
			if req.GetBody == nil && req.Body != nil && req.Body != http.NoBody {
				// The body was read to sign it: the clone sends the bytes read.
				out.Body = io.NopCloser(bytes.NewReader(body))
				out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			}
			out.Header.Set(SignatureHeader, signature(key, req.Method, req.URL.Path, attemptID, body))
			if attemptID != "" {
				out.Header.Set(SignatureAttemptHeader, attemptID)
			}
			return next.RoundTrip(out)
		})
	})
}

// signedBody returns the bytes of req's body without consuming req.Body
// when the request can hand out a fresh copy (GetBody); otherwise it reads
// and closes req.Body.
func signedBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// signature returns the hex HMAC-SHA256 under key of the signed message of
// one attempt (see NewSigner).
func signature(key []byte, method, path, attemptID string, body []byte) string {
	m := hmac.New(sha256.New, key)
	io.WriteString(m, method+"\n"+path+"\n"+attemptID+"\n")
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// closeBody closes req's body, as a RoundTripper must even when it fails.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}
