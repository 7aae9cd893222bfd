package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/recourse-dev/recourse/layer"
)

// viaRouterEnv, when set in a test process's environment, makes every rig
// serve its proxy as one route of a Router of all five wires (viaRouter),
// so that the package's wire tests run through a Router
// (TestR21_15_EveryWireTestThroughOneRouter). Its value is a file to which
// the process appends one line per rig built that way.
const viaRouterEnv = "RECOURSE_PROXY_TEST_VIA_ROUTER"

// viaRouter returns a Router whose route "wire" is cfg, without a prefix,
// beside a route of every other provider, each with a transport that fails
// the test when it is used (no network: the rig may be in a synctest
// bubble); a provider whose endpoints are
// cfg's too (omlx beside openai) gets a prefix. Client keys move from cfg to
// the Router, which admits clients for every route.
func viaRouter(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	rc := RouterConfig{ClientKeys: cfg.ClientKeys, Logger: cfg.Logger, Default: "wire"}
	cfg.ClientKeys = nil
	rc.Routes = append(rc.Routes, Route{Name: "wire", Config: cfg})
	bare, err := Endpoints(cfg.Provider) // the endpoints of the routes without a prefix
	require.NoError(t, err)
	for _, p := range Providers() {
		if p == cfg.Provider {
			continue
		}
		var contacted atomic.Int64
		decoy := layer.RoundTripperFunc(func(*http.Request) (*http.Response, error) {
			contacted.Add(1)
			return nil, errors.New("decoy upstream contacted")
		})
		t.Cleanup(func() {
			assert.Zero(t, contacted.Load(), "the Router sent a request of route %q to route %q", cfg.Provider, p)
		})
		r := Route{Name: "decoy-" + p, Config: Config{Provider: p, Upstream: "http://decoy-" + p + ".invalid", Transport: decoy, Logger: cfg.Logger}}
		theirs, err := Endpoints(p)
		require.NoError(t, err)
		if _, shared := sharedEndpoint(bare, theirs); shared {
			r.Prefix = "/decoy-" + p
		} else {
			bare = append(bare, theirs...)
		}
		rc.Routes = append(rc.Routes, r)
	}
	rt, err := NewRouter(rc)
	require.NoError(t, err)
	if f, err := os.OpenFile(os.Getenv(viaRouterEnv), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
		fmt.Fprintln(f, cfg.Provider, t.Name())
		f.Close()
	}
	return rt
}

// R21.15: every wire test of this package that builds its proxy with a rig
// passes when that proxy is one route of a Router of all five wires, the
// other four in front of upstreams that must never be contacted: the
// Router sends each wire's requests, recovered, forwarded or refused, to
// its route and nowhere else, and the route keeps every rule of its wire.
func TestR21_15_EveryWireTestThroughOneRouter(t *testing.T) {
	if os.Getenv(viaRouterEnv) != "" {
		t.Skip("this is the child process")
	}
	if testing.Short() {
		t.Skip("runs the package's tests a second time")
	}
	marks := t.TempDir() + "/rigs"
	cmd := exec.Command(os.Args[0], "-test.run=^Test", "-test.skip=^TestR21_15_EveryWireTestThroughOneRouter$|Bench", "-test.count=1", "-test.v", "-test.timeout=8m")
	cmd.Env = append(os.Environ(), viaRouterEnv+"="+marks)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		t.Fatalf("the wire tests through a Router failed: %v\n%s", err, lastLines(out.String(), 80))
	}
	b, err := os.ReadFile(marks)
	require.NoError(t, err)
	rigs := strings.Count(string(b), "\n")
	passed := len(regexp.MustCompile(`(?m)^--- PASS: `).FindAllString(out.String(), -1))
	t.Logf("%d tests passed in the child, %d rigs served through a Router", passed, rigs)
	assert.Greater(t, rigs, 50, "too few rigs went through a Router for this to prove anything")
	for _, wire := range Providers() {
		assert.Regexp(t, "(?m)^"+wire+" ", string(b), "no test of the %s wire went through a Router", wire)
	}
	assert.NotContains(t, out.String(), "--- FAIL")
	assert.Greater(t, passed, 100, strconv.Itoa(passed))
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
