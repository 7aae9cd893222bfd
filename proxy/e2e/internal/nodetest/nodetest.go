// Package nodetest installs the npm clients of the proxy's end-to-end
// tests (from their committed package-lock.json) once per test binary,
// and runs the caller's leak check after the tests ran.
package nodetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main copies files from src into a new temporary directory, runs
// `npm ci` there, sets *dir to it, runs m and exits: with 1 when the
// install fails or, after passing tests, when leaks (the caller's
// goleak.Find) reports an error; with m's code otherwise. The directory is
// removed before the exit.
func Main(m *testing.M, dir *string, leaks func() error, src string, files ...string) {
	os.Exit(run(m, dir, leaks, src, files))
}

func run(m *testing.M, dir *string, leaks func() error, src string, files []string) int {
	tmp, err := os.MkdirTemp("", "recourse-proxy-node")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, f), b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "npm ci: %v\n%s", err, out)
		return 1
	}
	*dir = tmp
	code := m.Run()
	if code == 0 {
		if err := leaks(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}
