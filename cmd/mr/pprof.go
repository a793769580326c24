package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// pprofMutexFraction and pprofBlockRate are the sampling rates servePprof
// turns on: one mutex contention event in 10 (runtime.SetMutexProfileFraction),
// and blocking events of 10 µs or more (runtime.SetBlockProfileRate, in ns).
const (
	pprofMutexFraction = 10
	pprofBlockRate     = 10_000
)

// servePprof serves net/http/pprof's handlers at addr (its own listener,
// apart from the daemon's status pages) and turns mutex and block
// profiling on; stop turns them off and closes the listener. It is for
// measuring a daemon (mr loadgen --jobtracker-pprof), not for production:
// the profiles are unauthenticated.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	runtime.SetBlockProfileRate(pprofBlockRate)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof server stopped", "address", l.Addr().String(), "error", err)
		}
	}()
	log.Info("pprof serving", "address", l.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		runtime.SetMutexProfileFraction(0)
		runtime.SetBlockProfileRate(0)
	}, nil
}
