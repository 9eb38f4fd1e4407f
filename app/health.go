package app

import (
	"errors"
	"fmt"

	"mailbolt/storage"
)

// Readiness failures, for GET /readyz and `mailbolt healthcheck`.
var (
	ErrShuttingDown      = errors.New("shutting down")
	ErrWorkersNotRunning = errors.New("the background workers are not running")
)

// BeginShutdown marks the service as going away: from now on Ready
// fails, so a load balancer stops sending it work while requests in
// flight finish.
func (a *App) BeginShutdown() { a.stopping.Store(true) }

// Ready reports whether the service can do its work: it is not shutting
// down, its workers run (App.Run), the database takes a write, and (on a
// shared database) this node's secret key is still the database's.
func (a *App) Ready() error {
	switch {
	case a.stopping.Load():
		return ErrShuttingDown
	case !a.running.Load():
		return ErrWorkersNotRunning
	}
	if err := a.db.Probe(a.Now()); errors.Is(err, storage.ErrSecretKey) {
		return fmt.Errorf("this node cannot use the database's secrets: %w", err)
	} else if err != nil {
		return fmt.Errorf("the database takes no writes: %w", err)
	}
	return nil
}
