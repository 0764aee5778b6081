package cluster

// Events as log records: the logger's half of emit (cluster.go). An outage is told once
// per host and state, whatever the number of connections and attempts that see it: the
// state changes (host-state, switch, fall-back) as they happen; a failure that repeats
// (a connection's report of a dead host, a failed fall-back, a failed probe, a session
// that ended, a transaction run again) once at Warn, then at Debug, with a reminder at
// Warn at most every DefaultLogRepeat while it goes on, until the host is up again. A
// host's host-state record (suspect, down) is the news of its failure: the failed
// probes, fall-backs and connections' reports that follow it are at Debug, and a failed
// probe, which the state records, never is news of its own; each connection attempt is
// at Debug (a host that goes down says so in its host-state record).

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// logRuns is what the logger remembers of the failures that repeat (see repeats): per
// host and kind, when the last one went out at Warn and how many were held back since.
type logRuns struct {
	mu   sync.Mutex
	runs map[runKey]*logRun
}

type runKey struct {
	host string
	kind failover.EventKind
}

type logRun struct {
	told time.Time // when the last record of the run went out at Warn
	held int       // records at Debug since
}

// repeats reports whether events of kind k are failures that repeat while their host
// stays in the same state: told once per run (see logRuns.level).
func repeats(k failover.EventKind) bool {
	switch k {
	case failover.EventHostFailed, failover.EventFallBackFailed, failover.EventProbe,
		failover.EventSessionEnded, failover.EventTxRerun:
		return true
	}
	return false
}

// level returns the level of a failure e, of a kind that repeats, at now: Warn for the
// first of its host's run (Debug for a failed probe: its host's state tells it), or for
// the first after DefaultLogRepeat (a reminder, with held, the count of those at Debug
// since), else Debug.
func (r *logRuns) level(e failover.Event, now time.Time) (level slog.Level, held int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runKey{e.Host, e.Kind}
	run := r.runs[k]
	switch {
	case run == nil:
		r.startLocked(k, now)
		if e.Kind == failover.EventProbe {
			return slog.LevelDebug, 0
		}
		return slog.LevelWarn, 0
	case now.Sub(run.told) >= DefaultLogRepeat:
		held, run.told, run.held = run.held, now, 0
		return slog.LevelWarn, held
	}
	run.held++
	return slog.LevelDebug, 0
}

// down starts, at now, the runs of the failures that follow a host's failure (a
// connection's report, a failed fall-back, a failed probe): its host-state record told
// it.
func (r *logRuns) down(host string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kind := range []failover.EventKind{failover.EventHostFailed, failover.EventFallBackFailed, failover.EventProbe} {
		if r.runs[runKey{host, kind}] == nil {
			r.startLocked(runKey{host, kind}, now)
		}
	}
}

// startLocked starts run k at now, with r.mu held.
func (r *logRuns) startLocked(k runKey, now time.Time) {
	if r.runs == nil {
		r.runs = map[runKey]*logRun{}
	}
	r.runs[k] = &logRun{told: now}
}

// end ends the runs of host: it is up again (or the pool is back on it), so its next
// failure is news.
func (r *logRuns) end(host string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.runs {
		if k.host == host {
			delete(r.runs, k)
		}
	}
}

// log writes e to l, the Cluster's logger, with times on clk: connection attempts and
// passed probes at Debug; state changes at Info (a host that is not up, an abort, at
// Warn); failures that repeat at Warn once per host's run (see logRuns).
func (r *logRuns) log(l *slog.Logger, clk Clock, e failover.Event) {
	level, held := slog.LevelInfo, 0
	switch {
	case e.Kind == failover.EventConnect, e.Kind == failover.EventProbePassed:
		level = slog.LevelDebug
	case e.Kind == failover.EventHostState && e.State == failover.HostUp, e.Kind == failover.EventFallBack:
		r.end(e.Host)
	case e.Err != nil && repeats(e.Kind):
		level, held = r.level(e, clk.Now())
	case e.Kind == failover.EventHostState && (e.State == failover.HostDown || e.State == failover.HostSuspect):
		r.down(e.Host, clk.Now())
		level = slog.LevelWarn
	case e.Err != nil, e.Kind == failover.EventAbort, e.Kind == failover.EventHostState:
		level = slog.LevelWarn
	}
	if !l.Enabled(context.Background(), level) {
		return
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
	if held > 0 {
		attrs = append(attrs, slog.Int("repeated", held)) // the same failure, at Debug since the last record at Warn
	}
	l.LogAttrs(context.Background(), level, "mysqlfailover: "+e.Kind.String(), attrs...)
}
