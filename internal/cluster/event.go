package cluster

// Events as log records: the logger's half of emit (cluster.go).

import (
	"context"
	"log/slog"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// log writes e to the Cluster's logger: connection attempts at Debug, failures at Warn,
// the rest at Info.
func (c *Cluster) log(e failover.Event) {
	level := slog.LevelInfo
	switch {
	case e.Kind == failover.EventConnect && e.Err == nil, e.Kind == failover.EventProbePassed:
		level = slog.LevelDebug
	case e.Err != nil, e.Kind == failover.EventAbort, e.Kind == failover.EventHostState && e.State != failover.HostUp:
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("event", e.Kind.String()), slog.String("host", e.Host)}
	if e.From != "" {
		attrs = append(attrs, slog.String("from", e.From))
	}
	if e.Kind == failover.EventHostState {
		attrs = append(attrs, slog.String("state", e.State.String()))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	if e.Duration > 0 {
		attrs = append(attrs, slog.Duration("duration", e.Duration))
	}
	c.env.Logger.LogAttrs(context.Background(), level, "mysqlfailover: "+e.Kind.String(), attrs...)
}
