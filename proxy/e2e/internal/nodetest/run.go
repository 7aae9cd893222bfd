package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"
)

// Run runs `node script args...` in dir (the directory Main installed the
// clients in) with PROXY_URL set to proxyURL and env added to the
// environment, ends it after timeout, and decodes the JSON the script
// printed into out. A script that fails, or prints anything else, fails t
// with the script's standard error or output.
func Run(t testing.TB, dir, proxyURL string, timeout time.Duration, env []string, out any, script string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "PROXY_URL="+proxyURL), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %v: %v\n%s", script, args, err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("node %s %v printed no JSON result: %v\n%s", script, args, err, b)
	}
}
