package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recourse-dev/recourse/layers/quota"
	"github.com/recourse-dev/recourse/redisstore"
)

// The environment variables of the Redis credentials and TLS. They have no
// flag, so that a password never appears on a command line (in ps, in a
// shell history) or in a log.
const (
	envRedisUsername = envPrefix + "REDIS_USERNAME"
	envRedisPassword = envPrefix + "REDIS_PASSWORD"
	envRedisTLS      = envPrefix + "REDIS_TLS"
)

// unavailableLogEvery is how often, at most, the proxy logs that Redis
// does not answer: the store's refresh fails every 250 ms during an outage.
const unavailableLogEvery = 30 * time.Second

// redisOptions returns the go-redis options for the -redis setting v: an
// address (host:port) or a redis:// or rediss:// URL (rediss: TLS), with
// the username, password and TLS from getenv. A password in the URL is
// refused. No error quotes v, which may carry a credential.
func redisOptions(v string, getenv func(string) string) (*redis.Options, error) {
	var opts *redis.Options
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return nil, errors.New("-redis is not a host:port address or a redis:// or rediss:// URL")
		}
		if _, ok := u.User.Password(); ok {
			return nil, fmt.Errorf("-redis: the URL carries a password; give it in %s instead, never on the command line", envRedisPassword)
		}
		if u.RawQuery != "" {
			// go-redis would read pool and timeout options there, which
			// the store's own client settings replace: refuse them rather
			// than ignore them.
			return nil, errors.New("-redis: the URL has a query; the proxy takes no go-redis options there, only host:port and the database")
		}
		parsed, err := redis.ParseURL(v)
		if err != nil {
			return nil, errors.New("-redis: the URL's path is not a Redis database number")
		}
		opts = redisstore.ClientOptions(parsed.Addr)
		opts.DB, opts.Username, opts.TLSConfig = parsed.DB, parsed.Username, parsed.TLSConfig
	} else {
		if _, _, err := net.SplitHostPort(v); err != nil {
			return nil, errors.New("-redis is not a host:port address or a redis:// or rediss:// URL")
		}
		opts = redisstore.ClientOptions(v)
	}
	if u := getenv(envRedisUsername); u != "" {
		opts.Username = u
	}
	opts.Password = getenv(envRedisPassword)
	switch t := strings.ToLower(getenv(envRedisTLS)); t {
	case "", "0", "false":
	case "1", "true":
		if opts.TLSConfig == nil {
			host, _, _ := net.SplitHostPort(opts.Addr)
			opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
		}
	default:
		return nil, fmt.Errorf("%s is %q; want true or false", envRedisTLS, t)
	}
	return opts, nil
}

// fleet is the Redis store of a fleet of proxies.
type fleet struct {
	rdb   *redis.Client
	store *redisstore.Store
}

// newFleet connects the store. Redis need not answer yet: the quota fails
// open until it does, and the failures are logged on log at most every
// unavailableLogEvery.
func newFleet(opts *redis.Options, log *slog.Logger) *fleet {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var last atomic.Int64
	onUnavailable := func(op string, err error) {
		now := time.Now().UnixNano()
		if l := last.Load(); l != 0 && now-l < int64(unavailableLogEvery) {
			return
		}
		last.Store(now)
		log.LogAttrs(context.Background(), slog.LevelWarn, "redis unavailable: the quota fails open, each proxy deciding alone",
			slog.String("op", op), slog.String("error", err.Error()))
	}
	rdb := redis.NewClient(opts)
	return &fleet{rdb: rdb, store: redisstore.New(rdb, redisstore.WithOnUnavailable(onUnavailable))}
}

// Close stops the store's refresh and closes the client.
func (f *fleet) Close() error {
	f.store.Close()
	return f.rdb.Close()
}

// fleetOptions returns the quota options of -redis and -quota-fleet-cap,
// and the fleet to close at exit (nil without -redis): s.fleet when it is
// set, which every route of a -config file shares, or a new one.
func (s *settings) fleetOptions(getenv func(string) string, log *slog.Logger) ([]quota.Option, *fleet, error) {
	if s.fleetCap < 0 {
		return nil, nil, fmt.Errorf("-quota-fleet-cap is %d; want 0 (none) or more", s.fleetCap)
	}
	if s.redis == "" {
		if s.fleetCap > 0 {
			return nil, nil, errors.New("-quota-fleet-cap needs -redis: a cap shared by every replica is counted in Redis")
		}
		return nil, nil, nil
	}
	f := s.fleet // the process's store, when a -config file's routes share it
	if f == nil {
		opts, err := redisOptions(s.redis, getenv)
		if err != nil {
			return nil, nil, err
		}
		f = newFleet(opts, log)
	}
	qo := []quota.Option{quota.WithStore(f.store)}
	if s.fleetCap > 0 {
		qo = append(qo, quota.WithFleetCap(s.fleetCap))
	}
	return qo, f, nil
}

// redisAddr is the -redis setting safe to log: host and port only.
func redisAddr(v string) string {
	if v == "" {
		return ""
	}
	if u, err := url.Parse(v); err == nil && strings.Contains(v, "://") {
		return u.Scheme + "://" + u.Host
	}
	if host, port, err := net.SplitHostPort(v); err == nil {
		return net.JoinHostPort(host, port)
	}
	return "(invalid)"
}
