package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultGrace is the default grace period of Serve: how long in-flight
// requests may run after shutdown began before they are cut.
const DefaultGrace = 30 * time.Second

// cutWait bounds how long Serve waits for cut requests to return.
const cutWait = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down: it stops
// accepting connections at once, closes every connection that has no
// request in flight (an idle keep-alive connection, and a connection that
// was opened but has not sent a request yet), lets in-flight requests
// finish within grace (zero means DefaultGrace), then cuts the rest by
// cancelling their contexts with cause ErrShutdown — a Handler's stream
// then ends with its in-band error frame, a request still waiting answers
// 503 — and waits up to five more seconds for them before closing every
// connection. The line "grace period over: cutting in-flight requests" is
// logged only when a request was still in flight when grace ran out.
// Serve returns nil after a shutdown, or the error that stopped the server
// earlier. log, which may be nil, receives the shutdown's lines and the
// server's own error log.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, grace time.Duration, log *slog.Logger) error {
	if grace <= 0 {
		grace = DefaultGrace
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cutCtx, cut := context.WithCancelCause(context.Background())
	defer cut(nil)
	var (
		inFlight atomic.Int64
		fresh    freshConns
	)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return cutCtx },
		ConnState:         fresh.track,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.LogAttrs(context.Background(), slog.LevelInfo, "shutting down", slog.Int64("grace_ms", grace.Milliseconds()))
	// net/http's Shutdown closes idle keep-alive connections at once but
	// waits up to five seconds for one that never sent a request; nothing
	// is in flight on such a connection, so it is closed here, and so is
	// every one accepted while the listener closes.
	srv.RegisterOnShutdown(fresh.closeAll)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	err := srv.Shutdown(sctx)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		if n := inFlight.Load(); n > 0 {
			log.LogAttrs(context.Background(), slog.LevelWarn, "grace period over: cutting in-flight requests", slog.Int64("in_flight", n))
		}
		cut(ErrShutdown)
		sctx, cancel := context.WithTimeout(context.Background(), cutWait)
		err = srv.Shutdown(sctx)
		cancel()
		if err != nil {
			srv.Close()
		}
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.LogAttrs(context.Background(), slog.LevelInfo, "stopped")
	return nil
}

// freshConns tracks the connections that have not started a request yet
// (http.StateNew), so that shutdown can close them without waiting. It is
// safe for concurrent use.
type freshConns struct {
	mu      sync.Mutex
	closing bool
	conns   map[net.Conn]struct{}
}

// track is the server's ConnState hook. Once closing, a connection that is
// still new is closed at once.
func (f *freshConns) track(c net.Conn, st http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st != http.StateNew {
		delete(f.conns, c)
		return
	}
	if f.closing {
		c.Close()
		return
	}
	if f.conns == nil {
		f.conns = make(map[net.Conn]struct{})
	}
	f.conns[c] = struct{}{}
}

// closeAll closes every connection that is still new and makes track close
// the ones that follow.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}
