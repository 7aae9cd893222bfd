package quota_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/chain"
	"github.com/recourse-dev/recourse/chat"
	"github.com/recourse-dev/recourse/client"
	"github.com/recourse-dev/recourse/codecs/openai"
	"github.com/recourse-dev/recourse/event"
	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/layers/retry"
	"github.com/recourse-dev/recourse/recoursetest"
)

// simulation is a fleet of replicas (each with its own chain and, when
// enabled, its own quota layer, as separate processes have) making one call
// each per virtual second against a provider that answers 503 to every
// request from outageStart to outageEnd. It runs inside a synctest bubble:
// the replicas call concurrently on the bubble's clock, replica i i ms into
// its second, and their backoff sleeps advance it as they would advance
// real time. No two replicas act at the same instant (a failing call's
// attempts span 350 ms), so the run is the same every time.
type simulation struct {
	replicas, seconds      int
	every                  int // a call per replica every this many seconds (0: 1)
	outageStart, outageEnd time.Duration
	quota                  bool
	fleetCap               int // with quota: a cap shared through one store
}

type simResult struct {
	requests        int
	resends         []int // per replica
	outageResends   int   // resends sent during the outage, fleet-wide
	succeeded, fail int
}

// outage is the simulation's provider: a request sent from start+from to
// start+to goes to the down server's host, which answers 503, any other to
// the up server's, which answers a completion (the memory network reaches
// each by its host).
type outage struct {
	net      http.RoundTripper
	up, down string // hosts
	start    time.Time
	from, to time.Duration
}

func (o *outage) during(at time.Time) bool {
	d := at.Sub(o.start)
	return d >= o.from && d < o.to
}

func (o *outage) RoundTrip(req *http.Request) (*http.Response, error) {
	host := o.up
	if o.during(time.Now()) {
		host = o.down
	}
	r := req.Clone(req.Context())
	r.URL.Host, r.Host = host, ""
	return o.net.RoundTrip(r)
}

const simMaxAttempts = 4

func (s simulation) run(t *testing.T) simResult {
	var res simResult
	synctest.Test(t, func(t *testing.T) { res = s.runInBubble(t) })
	return res
}

func (s simulation) runInBubble(t *testing.T) simResult {
	every := max(s.every, 1)
	calls := (s.seconds + every - 1) / every
	most := s.replicas * calls * simMaxAttempts // the requests the fleet can make
	upSrv := newProvider(t, repeat(recoursetest.JSON(200, recoursetest.OpenAIChat("ok")), most)...)
	downSrv := newProvider(t, repeat(recoursetest.JSON(503, recoursetest.OpenAIError("server_error", "server_error", "overloaded")), most)...)
	prov := &outage{net: upSrv.Transport(), up: strings.TrimPrefix(upSrv.URL, "http://"), down: strings.TrimPrefix(downSrv.URL, "http://"),
		start: time.Now(), from: s.outageStart, to: s.outageEnd}
	store := quota.NewMemoryStore() // the fleet's shared store (Redis in production)
	var (
		mu  sync.Mutex
		res = simResult{resends: make([]int, s.replicas)}
	)
	clients := make([]*client.Client, s.replicas)
	for i := range clients {
		pol := retry.Policy{MaxAttempts: simMaxAttempts, Jitter: func() float64 { return 0.5 },
			OnEvent: func(ev event.Event) error {
				if ev.Type == event.RetryStarted {
					mu.Lock()
					res.resends[i]++
					if prov.during(time.Now()) {
						res.outageResends++
					}
					mu.Unlock()
				}
				return nil
			}}
		opts := []chain.Option{chain.WithPolicy(pol), chain.WithTransport(prov)}
		if s.quota {
			qo := []quota.Option{quota.WithStore(store)}
			if s.fleetCap > 0 {
				qo = append(qo, quota.WithFleetCap(s.fleetCap))
			}
			opts = append(opts, chain.WithPerCall(mustQuota(t, qo...)))
		}
		ch, err := chain.Default(openai.New(), opts...)
		require.NoError(t, err)
		clients[i], err = client.New(upSrv.URL, ch)
		require.NoError(t, err)
	}
	req := &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hi"}}}
	require.LessOrEqual(t, s.replicas, 50, "beyond 50 replicas 1 ms apart, two would act at the same instant")
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for sec := 0; sec < s.seconds; sec += every {
				// Each call starts on its second, whatever the backoff of
				// the one before took (less than a second here).
				at := time.Duration(sec)*time.Second + time.Duration(i)*time.Millisecond
				time.Sleep(time.Until(prov.start.Add(at)))
				_, err := c.Complete(context.Background(), req)
				mu.Lock()
				if err == nil {
					res.succeeded++
				} else {
					res.fail++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.requests = upSrv.Count() + downSrv.Count()
	require.Less(t, res.requests, most, "the scripts did not run out")
	return res
}

// The simulation of the table in docs/quota.md: 10 replicas × 120 calls (one per
// replica per second) against a provider that fails every request for 40 s.
// Without a quota every failed call is resent 3 times; with the quota each
// replica resends at most max(3, 0.2 × its calls in the last 60 s), and a
// fleet cap bounds the fleet's sum whatever the number of replicas. The
// quota changes no outcome here (nothing succeeds during the outage) and
// only removes load.
func TestSimulationFleetOutage(t *testing.T) {
	base := simulation{replicas: 10, seconds: 120, outageStart: 30 * time.Second, outageEnd: 70 * time.Second}
	results := simTable(t, base, 20)
	none, q, capped := results[0], results[1], results[2]
	outageCalls := 40 * 10
	assert.Equal(t, 3*outageCalls, sum(none.resends), "without a quota every failed call is resent 3 times")
	for _, n := range q.resends {
		assert.LessOrEqual(t, n, 12, "each replica within 0.2 × its 60 calls of a window")
	}
	assert.Less(t, sum(q.resends), sum(none.resends)/4)
	assert.LessOrEqual(t, capped.outageResends, 20, "the fleet cap bounds the fleet")
	for _, r := range results {
		assert.Equal(t, none.succeeded, r.succeeded, "the quota changes no outcome: nothing succeeds during the outage")
	}
}

// The floor multiplies with the replicas: 50 replicas making a call every
// 10 s (too few calls for the ratio to allow anything) each get the floor
// of 3 resends, 150 in all; the fleet cap is what bounds the fleet.
func TestSimulationLowTrafficFleet(t *testing.T) {
	base := simulation{replicas: 50, seconds: 120, every: 10, outageStart: 30 * time.Second, outageEnd: 70 * time.Second}
	results := simTable(t, base, 20)
	none, q, capped := results[0], results[1], results[2]
	assert.Equal(t, 50*4*3, sum(none.resends), "4 failing calls per replica, each resent 3 times")
	for _, n := range q.resends {
		assert.Equal(t, quota.DefaultFloor, n, "each replica gets the floor")
	}
	assert.Equal(t, 20, capped.outageResends, "the fleet cap")
}

// simTable runs base without a quota, with the quota, and with the quota
// and a fleet cap, and logs the table of docs/quota.md.
func simTable(t *testing.T, base simulation, fleetCap int) []simResult {
	type row struct {
		name string
		sim  simulation
	}
	rows := []row{
		{"no quota", base},
		{"quota (0.2, floor 3, 60 s), per process", func() simulation { s := base; s.quota = true; return s }()},
		{fmt.Sprintf("quota + fleet cap %d per 60 s", fleetCap), func() simulation { s := base; s.quota, s.fleetCap = true, fleetCap; return s }()},
	}
	var table strings.Builder
	table.WriteString("| fleet | requests | resends per replica (max) | resends, fleet | resends during the outage | calls ok / failed |\n|---|---|---|---|---|---|\n")
	var results []simResult
	for _, r := range rows {
		res := r.sim.run(t)
		results = append(results, res)
		total, most := 0, 0
		for _, n := range res.resends {
			total += n
			most = max(most, n)
		}
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d / %d |\n", r.name, res.requests, most, total, res.outageResends, res.succeeded, res.fail)
	}
	t.Logf("%d replicas, a call each every %d s for %d s, outage from %v to %v:\n%s", base.replicas, max(base.every, 1), base.seconds,
		base.outageStart, base.outageEnd, table.String())
	return results
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
