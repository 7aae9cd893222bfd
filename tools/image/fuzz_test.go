package main

import (
	"os"
	"regexp"
	"testing"
)

// tagPattern is the OCI distribution specification's tag grammar.
var tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// FuzzDeployParsers feeds the tests' readers of the Dockerfile, the compose
// file, the systemd unit and flag lists, and the image's tag maker,
// arbitrary text: none may panic, and every tag is a valid OCI tag.
func FuzzDeployParsers(f *testing.F) {
	for _, p := range []string{"deploy/Dockerfile", "deploy/compose.yaml", "deploy/recourse-proxy.service", "deploy/recourse-proxy.env"} {
		b, err := os.ReadFile("../../" + p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Add("(devel)")
	f.Add("v0.1.0+dirty")
	f.Add("FROM a \\\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, in := range parseDockerfile(s) {
			if in.stage < -1 {
				t.Fatalf("instruction %+v", in)
			}
		}
		parseCompose(s)
		unitDirectives(s)
		flagNames([]string{s, "-" + s})
		if tag := tagOf(s); !tagPattern.MatchString(tag) {
			t.Fatalf("tagOf(%q) = %q, not a tag", s, tag)
		}
	})
}
