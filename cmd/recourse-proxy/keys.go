package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/recourse-dev/recourse/proxy"
)

// envUpstreamKey is the environment variable of the upstream key the proxy
// holds. It has no flag, so that the key never appears on a command line
// (in ps, in a shell history) or in a log.
const envUpstreamKey = envPrefix + "UPSTREAM_KEY"

// keySettings are the settings of the keys the proxy holds and admits
// (R21.12).
type keySettings struct {
	upstreamKeyFile string
	clientKeys      string
}

// defineKeys registers the key flags.
func defineKeys(fs *flag.FlagSet, s *settings) {
	fs.StringVar(&s.keys.upstreamKeyFile, "upstream-key-file", "", "hold the upstream's key, read from this file (or from "+envUpstreamKey+", never from the command line), and send it on every upstream request in the wire's own header (Authorization: Bearer; x-api-key for anthropic; x-goog-api-key for gemini) in place of every credential the client sent (empty: the client's key passes through)")
	fs.StringVar(&s.keys.clientKeys, "client-keys", "", "admit only clients that send a proxy key as Authorization: Bearer <key>, checked against this file of SHA-256 hashes, one \"<sha256 hex> [name] [routes]\" a line (routes: completions, responses, forward or a path prefix, comma-separated; none: every route); others get 401, and with it a non-loopback -listen needs no -allow-remote (empty: every client is admitted)")
}

// keyConfig sets cfg's held upstream key and client keys from s.
func (s *settings) keyConfig(cfg *proxy.Config) error {
	key := ""
	if s.getenv != nil {
		key = s.getenv(envUpstreamKey)
	}
	if s.keys.upstreamKeyFile != "" {
		if key != "" {
			return fmt.Errorf("both %s and -upstream-key-file are set; give the upstream key one way", envUpstreamKey)
		}
		b, err := os.ReadFile(s.keys.upstreamKeyFile)
		if err != nil {
			return fmt.Errorf("-upstream-key-file: %v", err)
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return errors.New("-upstream-key-file: the file is empty; want the upstream's key")
		}
	}
	if strings.ContainsAny(key, "\r\n") {
		return errors.New("the upstream key holds a line break; want one key on one line")
	}
	cfg.UpstreamKey = key
	if s.keys.clientKeys != "" {
		f, err := os.Open(s.keys.clientKeys)
		if err != nil {
			return fmt.Errorf("-client-keys: %v", err)
		}
		defer f.Close()
		if cfg.ClientKeys, err = proxy.ParseClientKeys(f); err != nil {
			return fmt.Errorf("-client-keys: %v", err)
		}
	}
	return nil
}

// remoteAllowed reports whether -listen may be an address other than
// loopback: with -allow-remote, or with -client-keys, which admits only
// clients with a key.
func (s *settings) remoteAllowed() bool { return s.allowRemote || s.keys.clientKeys != "" }
