package redisstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layer"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/redisstore"
)

// The child process: the test binary re-executed with these variables.
const (
	childEnv      = "RECOURSE_REDISSTORE_CHILD" // the provider's URL
	childRedis    = "RECOURSE_REDISSTORE_REDIS"
	childCalls    = "RECOURSE_REDISSTORE_CALLS"
	childAttempts = "RECOURSE_REDISSTORE_ATTEMPTS"
	childCap      = "RECOURSE_REDISSTORE_CAP"
)

// childReport is what a child prints on its standard output.
type childReport struct {
	Calls    int     `json:"calls"`
	Resends  int     `json:"resends"`
	Refused  int     `json:"refused"`
	DelaysMS []int64 `json:"delays_ms"`
}

// child makes its calls through a chain with its own quota over the shared
// Redis and reports them; its Sleep returns at once (no test sleeps for
// backoff) and its wall clock is the real one, which Redis horizons share.
func child() int {
	atoi := func(k string) int { n, _ := strconv.Atoi(os.Getenv(k)); return n }
	rdb := redis.NewClient(testClientOptions(os.Getenv(childRedis)))
	defer rdb.Close()
	store := redisstore.New(rdb, redisstore.WithTimeout(testTimeout))
	defer store.Close()
	opts := []quota.Option{quota.WithStore(store), quota.WithStoreTimeout(testTimeout)}
	if c := atoi(childCap); c > 0 {
		opts = append(opts, quota.WithFleetCap(c))
	}
	q, err := quota.New(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var rep childReport
	pol := retry.Policy{MaxAttempts: atoi(childAttempts), DelayCeiling: new(time.Minute), Jitter: func() float64 { return 0 },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
		OnEvent: func(ev event.Event) error {
			switch ev.Type {
			case event.RetryStarted:
				rep.Resends++
			case event.DelayScheduled:
				rep.DelaysMS = append(rep.DelaysMS, ev.Delay.Milliseconds())
			}
			return nil
		}}
	ch, err := chain.Default(openai.New(), chain.WithPolicy(pol), chain.WithPerCall(q))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cl, err := client.New(os.Getenv(childEnv), ch)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for range atoi(childCalls) {
		rep.Calls++
		_, err := cl.Complete(context.Background(), &chat.Request{Model: "gpt-test", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}})
		var re *layer.RecoveryError
		if errors.As(err, &re) && re.Outcome == event.OutcomeQuotaExhausted {
			rep.Refused++
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// runChild starts a child process of the test binary.
func runChild(t *testing.T, providerURL, redisAddr string, calls, attempts, fleetCap int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+providerURL, childRedis+"="+redisAddr,
		childCalls+"="+strconv.Itoa(calls), childAttempts+"="+strconv.Itoa(attempts), childCap+"="+strconv.Itoa(fleetCap))
	cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &bytes.Buffer{}
	require.NoError(t, cmd.Start())
	return cmd
}

func report(t *testing.T, cmd *exec.Cmd) childReport {
	require.NoError(t, cmd.Wait(), "child: %s", cmd.Stderr)
	var rep childReport
	require.NoError(t, json.Unmarshal(cmd.Stdout.(*bytes.Buffer).Bytes(), &rep), "child said %q", cmd.Stdout)
	return rep
}

// Two OS processes sharing one Redis: each holds its ratio by itself, and
// the fleet cap bounds the sum, which the two floors alone would not.
func TestTwoProcessesShareTheQuota(t *testing.T) {
	srv := startRedis(t)
	var n atomic.Int64
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		serve(w, answer{status: 503})
	}))
	defer prov.Close()
	const calls, fleetCap = 20, 6
	a := runChild(t, prov.URL, srv.addr(), calls, 3, fleetCap)
	b := runChild(t, prov.URL, srv.addr(), calls, 3, fleetCap)
	ra, rb := report(t, a), report(t, b)
	for _, r := range []childReport{ra, rb} {
		assert.Equal(t, calls, r.Calls)
		assert.LessOrEqual(t, r.Resends, max(quota.DefaultFloor, calls/5), "each process holds its ratio")
	}
	assert.Equal(t, fleetCap, ra.Resends+rb.Resends, "the fleet cap bounds the sum")
	assert.Equal(t, int64(2*calls+fleetCap), n.Load(), "every attempt is accounted for")
}

// A Retry-After seen by one process delays the other's resend until the
// shared horizon.
func TestRetryAfterInOneProcessDelaysTheOther(t *testing.T) {
	srv := startRedis(t)
	var n atomic.Int64
	prov := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			serve(w, answer{status: 429, header: []string{"Retry-After", "20"}})
		case 2:
			serve(w, answer{status: 503})
		default:
			serve(w, answer{status: 200})
		}
	}))
	defer prov.Close()
	ra := report(t, runChild(t, prov.URL, srv.addr(), 1, 1, 0))
	assert.Empty(t, ra.DelaysMS, "the first process gave up (one attempt) and shared the horizon")
	rb := report(t, runChild(t, prov.URL, srv.addr(), 1, 2, 0))
	require.Len(t, rb.DelaysMS, 1)
	d := time.Duration(rb.DelaysMS[0]) * time.Millisecond
	assert.True(t, d > 10*time.Second && d <= 20*time.Second, "the second process's resend waits for the horizon: %v", d)
	assert.Equal(t, 1, rb.Resends)
	assert.Equal(t, int64(3), n.Load())
}
