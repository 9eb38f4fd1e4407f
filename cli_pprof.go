package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// checkPprofAddr refuses any --pprof-addr that is not a loopback address:
// a profile holds what the process holds in memory (API keys as they are
// checked, DKIM private keys, message contents), so it is for the operator
// on the machine itself (or through an SSH tunnel), never for a network.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof-addr: %q is not host:port", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--pprof-addr: %q is not a loopback address: profiles hold secrets (API keys, DKIM keys, "+
		"message contents), so they are served on 127.0.0.1 or [::1] only; reach them from elsewhere through an SSH tunnel", addr)
}

// listenPprof binds --pprof-addr; nil when it is empty (the default).
func listenPprof(cfg serveConfig) (net.Listener, error) {
	if cfg.pprofAddr == "" {
		return nil, nil
	}
	if err := checkPprofAddr(cfg.pprofAddr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.pprofAddr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: listen on %s: %w", cfg.pprofAddr, err)
	}
	return ln, nil
}

// pprofServer serves net/http/pprof's handlers under /debug/pprof/ on a
// mux of its own (never http.DefaultServeMux, which anything imported may
// add to).
func pprofServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A CPU profile or trace runs for its ?seconds=, 30 by default.
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
}
