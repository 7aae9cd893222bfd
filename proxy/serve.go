package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// DefaultGrace is the default grace period of Serve: how long in-flight
// requests may run after shutdown began before they are cut.
const DefaultGrace = 30 * time.Second

// cutWait bounds how long Serve waits for cut requests to return.
const cutWait = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down: it stops
// accepting connections at once, lets in-flight requests finish within
// grace (zero means DefaultGrace), then cuts the rest by cancelling their
// contexts with cause ErrShutdown — a Handler's stream then ends with its
// in-band error frame, a request still waiting answers 503 — and waits up
// to five more seconds for them before closing every connection. Serve
// returns nil after a shutdown, or the error that stopped the server
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
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return cutCtx },
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
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	err := srv.Shutdown(sctx)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		log.LogAttrs(context.Background(), slog.LevelWarn, "grace period over: cutting in-flight requests")
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
