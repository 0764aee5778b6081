// Package mysqlfailoverotel records the failover state of a mysqlfailover.Connector as
// OpenTelemetry metrics (go.opentelemetry.io/otel/metric): observable instruments read
// (*mysqlfailover.Connector).Stats at each collection, and histograms and a counter
// record the connector's events (probe latency, walk duration, failed probes).
//
//	m, err := mysqlfailoverotel.New(otel.GetMeterProvider()) // go.opentelemetry.io/otel
//	if err != nil {
//		return err
//	}
//	defer m.Close()
//	c, err := mysqlfailover.NewConnector(cfg, m.Option(), mysqlfailover.WithEventHook(myHook))
//	if err != nil {
//		return err
//	}
//	m.SetConnector(c)
//	db := sql.OpenDB(c)
//
// The histograms need the events, so the connector must be built with m.Option(); a pool
// opened with sql.Open("mysqlfailover", dsn) gives only the Stats instruments
// (SetConnector with mysqlfailover.ConnectorOf). One Metrics serves one Connector.
//
// # Instruments
//
// The meter is named after this package's import path. Host attributes are
// server.address and server.port (as in the database client semantic conventions) and
// mysqlfailover.dc, the host's data-centre label ("" for none).
//
//	mysqlfailover.host.state             Int64ObservableGauge         1    1 for the host's state (attribute
//	                                                                       mysqlfailover.host.state: unknown, up,
//	                                                                       suspect, down, backoff, wrong_role,
//	                                                                       not_ready), 0 else
//	mysqlfailover.host.role              Int64ObservableGauge         1    1 for the role the last role check found
//	                                                                       (mysqlfailover.host.role: unknown, primary,
//	                                                                       read_only_primary, standby; unknown while
//	                                                                       the host is down), 0 else
//	mysqlfailover.host.active            Int64ObservableGauge         1    1 for the host the pool uses now (0 for
//	                                                                       every host while it uses none: its host
//	                                                                       is down, Stats.Active "")
//	mysqlfailover.host.primary           Int64ObservableGauge         1    1 for the host the pool returns to
//	mysqlfailover.host.connection.count  Int64ObservableUpDownCounter {connection}  physical connections open,
//	                                                                       probe connections included
//	mysqlfailover.failovers              Int64ObservableCounter       {failover}   moves after a failure
//	mysqlfailover.fall_backs             Int64ObservableCounter       {fall_back}  returns to the primary
//	mysqlfailover.aborts                 Int64ObservableCounter       {abort}      abort rounds
//	mysqlfailover.probe.duration         Float64Histogram             s    each passed probe's latency
//	mysqlfailover.probe.failures         Int64Counter                 {probe}      failed probes
//	mysqlfailover.walk.duration          Float64Histogram             s    each host walk that moved the pool
//	                                                                       (mysqlfailover.walk.kind: switch, fall_back;
//	                                                                       under probing a fall_back is how long the
//	                                                                       primary had passed its probes when the
//	                                                                       pool returned)
//	mysqlfailover.writer.available       Int64ObservableGauge         1    1 while the pool can serve writes as far
//	                                                                       as the driver knows (Stats.WriterAvailable)
//	mysqlfailover.write.refusals         Int64ObservableCounter       {refusal}    writes that could not be
//	                                                                       served: refused as read-only (1290, 1836,
//	                                                                       1792), or no host to use (no writer)
//	                                                                       (Stats.WriteRefusals): attempts
//	mysqlfailover.two_writers            Int64ObservableGauge         1    1 while more than one host of a
//	                                                                       replication cluster is writable at once
//	                                                                       (Stats.Writers: a split brain to fence,
//	                                                                       see failover.EventTwoWriters), else 0
//	mysqlfailover.caller.errors          Int64ObservableCounter       {error}      errors returned to callers
//	                                                                       because a host failed, refused or was
//	                                                                       missing (Stats.CallerErrors): what the
//	                                                                       application saw
//	mysqlfailover.host.origin            Int64ObservableGauge         1    1 for where the host came from
//	                                                                       (mysqlfailover.host.origin: dsn,
//	                                                                       host_list, discovered), 0 else
//	mysqlfailover.host.discovered        Float64ObservableGauge       s    when discovery (discoverHosts) found
//	                                                                       the host, Unix time; discovered hosts only
//	mysqlfailover.discovery.problem      Int64ObservableGauge         1    1 while discoverHosts finds no host for a
//	                                                                       reason to act on (Stats.Discovery: a
//	                                                                       missing privilege, members without an
//	                                                                       address), else 0
//
// Alert on mysqlfailover.caller.errors for what callers saw: it does not count what
// the driver absorbed (a statement it ran again on the new host, a write a demoted
// primary refused that it ran on the new writer). mysqlfailover.write.refusals counts
// attempts: a refused write the driver then ran on the new writer counts there, and so
// does each retry of a caller, so it may read 5 while callers saw no failed write. A
// rule on the increase of either over a window keeps firing for that window after the
// last error.
//
// Every counter reports from the first collection after SetConnector, at 0 until
// something is counted: the pool's, and mysqlfailover.probe.failures for each listed
// host (a host a new host list adds gets its point then), so that an increase over the
// first burst of failures sees them. The histograms have no point before their first
// measurement (the metric API has no way to make an empty one): alert on the counters.
// A host's role reads unknown while it is down (its last role is no longer known).
//
// With replicaReads (read/write splitting), per host (the host attributes) and for the
// pool:
//
//	mysqlfailover.host.replica.qualified Int64ObservableGauge         1    1 while the host serves read-intent
//	                                                                       statements as a replica: it qualifies
//	                                                                       and is up; 0 while it does not
//	                                                                       (HostStats.ReplicaSkip says why), and
//	                                                                       for a replica not used yet (state
//	                                                                       unknown, checkInterval 0)
//	mysqlfailover.host.replica.lag       Float64ObservableGauge       s    replication lag as the host's last
//	                                                                       probe read it (no point while unknown)
//	mysqlfailover.host.replica.reads     Int64ObservableCounter       {read}       read-intent statements it
//	                                                                       served as a replica
//	mysqlfailover.replica.retries        Int64ObservableCounter       {retry}      read-intent statements that
//	                                                                       failed on a replica before their result
//	                                                                       started and ran again
//	mysqlfailover.replica.to_primary     Int64ObservableCounter       {read}       read-intent statements that ran
//	                                                                       on the primary: no replica qualified
//	mysqlfailover.causal_reads           Int64ObservableCounter       {read}       causal reads (causalReads), by
//	                                                                       mysqlfailover.causal_read.path: waited
//	                                                                       (a replica served them after waiting
//	                                                                       for the write's position) or primary
//
// The qualifying gauge is host.replica.qualified, not host.replica, because
// mysqlfailover.host.replica is the namespace of the other two (the semantic conventions'
// naming rules keep a name from being both). These instruments report only for a
// connector with replicaReads=true (at 0 until something is counted), none without it: a
// pool that does not split reads reports no replica points rather than zeros that would
// read as "no replica qualifies". Stats tells: with replicaReads at least the pool's
// writer has a ReplicaSkip ("the pool's writer"), without it no host has one. The reason
// is no attribute (its text is free-form, carrying the lag and the error: a new series at
// each change); Stats, the EventReplica events and WithLogger's records give it.
//
// mysqlfailover.host.replica.lag needs checkInterval > 0 (the probes read the lag with
// SHOW REPLICA STATUS, or SHOW SLAVE STATUS on older servers; the probe user needs
// REPLICA MONITOR on MariaDB 10.5+, REPLICATION CLIENT on MySQL); a host has no point
// while its lag is unknown (not read yet, not a replica, a replication thread stopped, no
// privilege).
//
// These are not db.client.connection.*: those count a pool's connections by idle/used
// state, which database/sql knows (otelsql reports them); this package reports per host.
package mysqlfailoverotel

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the name of the meter (the instrumentation scope).
const ScopeName = "github.com/mysqlfailover/mysqlfailover/metrics/otel"

// ProbeBuckets are the explicit bucket boundaries, in seconds, of
// mysqlfailover.probe.duration: 0.5 ms to 5 s.
var ProbeBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// WalkBuckets are the explicit bucket boundaries, in seconds, of
// mysqlfailover.walk.duration: 1 ms to 2 min.
var WalkBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

var (
	states  = []string{"unknown", "up", "suspect", "down", "backoff", "wrong_role", "not_ready"}
	roles   = []string{"unknown", "primary", "read_only_primary", "standby"}
	origins = []string{"dsn", "host_list", "discovered"} // in the order of failover.HostOrigin
)

// Metrics records one Connector. Its methods are safe for concurrent use. Build it with
// New.
type Metrics struct {
	conn     atomic.Pointer[mysqlfailover.Connector]
	mu       sync.Mutex
	hosts    map[string]attribute.Set // host -> its attributes
	probe    metric.Float64Histogram
	failures metric.Int64Counter
	walk     metric.Float64Histogram
	reg      metric.Registration
	// stats returns the snapshot the observable instruments report, false for none: the
	// connector's Stats (tests replace it).
	stats func() (failover.Stats, bool)
}

// New creates the instruments on mp's meter ScopeName. It returns an error for a nil mp
// and any error of the meter (an invalid instrument).
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, errors.New("mysqlfailoverotel: nil MeterProvider")
	}
	meter := mp.Meter(ScopeName)
	m := &Metrics{hosts: map[string]attribute.Set{}}
	m.stats = func() (failover.Stats, bool) {
		if cn := m.conn.Load(); cn != nil {
			return cn.Stats(), true
		}
		return failover.Stats{}, false
	}
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	m.probe, err = meter.Float64Histogram("mysqlfailover.probe.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of each passed probe (checkInterval > 0), reopening the probe connection included."),
		metric.WithExplicitBucketBoundaries(ProbeBuckets...))
	add(err)
	m.failures, err = meter.Int64Counter("mysqlfailover.probe.failures", metric.WithUnit("{probe}"),
		metric.WithDescription("Failed probes (checkInterval > 0)."))
	add(err)
	m.walk, err = meter.Float64Histogram("mysqlfailover.walk.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of each host walk that moved the pool, from its start to the working connection on the new host."),
		metric.WithExplicitBucketBoundaries(WalkBuckets...))
	add(err)
	state, err := meter.Int64ObservableGauge("mysqlfailover.host.state", metric.WithUnit("1"),
		metric.WithDescription("What the pool believes of the host: 1 for its state, 0 for the others."))
	add(err)
	role, err := meter.Int64ObservableGauge("mysqlfailover.host.role", metric.WithUnit("1"),
		metric.WithDescription("The role the last role check found on the host: 1 for it, 0 for the others."))
	add(err)
	active, err := meter.Int64ObservableGauge("mysqlfailover.host.active", metric.WithUnit("1"),
		metric.WithDescription("1 for the host the pool uses now, 0 for the others (for all while it uses none: its host is down)."))
	add(err)
	primary, err := meter.Int64ObservableGauge("mysqlfailover.host.primary", metric.WithUnit("1"),
		metric.WithDescription("1 for the host the pool returns to (the primary), 0 for the others."))
	add(err)
	conns, err := meter.Int64ObservableUpDownCounter("mysqlfailover.host.connection.count", metric.WithUnit("{connection}"),
		metric.WithDescription("Physical connections open to the host, probe connections included."))
	add(err)
	failovers, err := meter.Int64ObservableCounter("mysqlfailover.failovers", metric.WithUnit("{failover}"),
		metric.WithDescription("Moves of the pool to another host after a failure."))
	add(err)
	fallBacks, err := meter.Int64ObservableCounter("mysqlfailover.fall_backs", metric.WithUnit("{fall_back}"),
		metric.WithDescription("Returns of the pool to the primary."))
	add(err)
	aborts, err := meter.Int64ObservableCounter("mysqlfailover.aborts", metric.WithUnit("{abort}"),
		metric.WithDescription("Abort rounds: hosts whose in-flight statements were aborted after probes declared them down."))
	add(err)
	replica, err := meter.Int64ObservableGauge("mysqlfailover.host.replica.qualified", metric.WithUnit("1"),
		metric.WithDescription("1 while the host serves read-intent statements as a replica (replicaReads): it qualifies and is up; 0 while it does not or is not used yet."))
	add(err)
	lag, err := meter.Float64ObservableGauge("mysqlfailover.host.replica.lag", metric.WithUnit("s"),
		metric.WithDescription("Replication lag of the host as its last probe read it (Seconds_Behind_Master or _Source, whole seconds); no point while unknown."))
	add(err)
	reads, err := meter.Int64ObservableCounter("mysqlfailover.host.replica.reads", metric.WithUnit("{read}"),
		metric.WithDescription("Read-intent statements the host served as a replica."))
	add(err)
	retries, err := meter.Int64ObservableCounter("mysqlfailover.replica.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Read-intent statements that failed on a replica before their result started and ran again on another host."))
	add(err)
	toPrimary, err := meter.Int64ObservableCounter("mysqlfailover.replica.to_primary", metric.WithUnit("{read}"),
		metric.WithDescription("Read-intent statements that ran on the primary because no replica qualified (readFromSourceWhenNoReplicas)."))
	add(err)
	writer, err := meter.Int64ObservableGauge("mysqlfailover.writer.available", metric.WithUnit("1"),
		metric.WithDescription("1 while the pool can serve writes as far as the driver knows (its host is up and a writer), 0 while it cannot."))
	add(err)
	refusals, err := meter.Int64ObservableCounter("mysqlfailover.write.refusals", metric.WithUnit("{refusal}"),
		metric.WithDescription("Writes that could not be served: statements refused as read-only (1290, 1836, 1792) and connections or statements that found no host (no writer)."))
	add(err)
	callerErrors, err := meter.Int64ObservableCounter("mysqlfailover.caller.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Errors the driver returned to callers because a host failed, refused or was missing (FailoverError, NoHostAvailableError, ErrTxLost, ErrCommitOutcomeUnknown, read-only refusals)."))
	add(err)
	twoWriters, err := meter.Int64ObservableGauge("mysqlfailover.two_writers", metric.WithUnit("1"),
		metric.WithDescription("1 while more than one host of a replication cluster is writable at once (two writers: fence all but the one the replicas follow), 0 otherwise."))
	add(err)
	origin, err := meter.Int64ObservableGauge("mysqlfailover.host.origin", metric.WithUnit("1"),
		metric.WithDescription("Where the host came from: 1 for its origin (dsn, host_list, discovered), 0 for the others."))
	add(err)
	discovered, err := meter.Float64ObservableGauge("mysqlfailover.host.discovered", metric.WithUnit("s"),
		metric.WithDescription("When discovery (discoverHosts) found the host, as Unix time; discovered hosts only."))
	add(err)
	discoveryProblem, err := meter.Int64ObservableGauge("mysqlfailover.discovery.problem", metric.WithUnit("1"),
		metric.WithDescription("1 while discoverHosts finds no host for a reason to act on (Stats.Discovery says which), 0 otherwise."))
	add(err)
	causal, err := meter.Int64ObservableCounter("mysqlfailover.causal_reads", metric.WithUnit("{read}"),
		metric.WithDescription("Causal reads (causalReads): path waited, served by a replica after it reached the write's position; path primary, sent to the primary instead."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	waited := metric.WithAttributes(attribute.String("mysqlfailover.causal_read.path", "waited"))
	toPrimaryPath := metric.WithAttributes(attribute.String("mysqlfailover.causal_read.path", "primary"))
	m.reg, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s, ok := m.stats()
		if !ok {
			return nil
		}
		o.ObserveInt64(failovers, s.Failovers)
		o.ObserveInt64(fallBacks, s.FallBacks)
		o.ObserveInt64(aborts, s.Aborted)
		o.ObserveInt64(writer, int01(s.WriterAvailable))
		o.ObserveInt64(refusals, s.WriteRefusals)
		o.ObserveInt64(callerErrors, s.CallerErrors)
		o.ObserveInt64(twoWriters, int01(len(s.Writers) > 1))
		o.ObserveInt64(discoveryProblem, int01(s.Discovery != ""))
		replicas := replicaReads(s)
		if replicas {
			o.ObserveInt64(retries, s.ReplicaRetries)
			o.ObserveInt64(toPrimary, s.ReplicaToPrimary)
			o.ObserveInt64(causal, s.CausalWaits, waited)
			o.ObserveInt64(causal, s.CausalPrimary, toPrimaryPath)
		}
		for _, h := range s.Hosts {
			base := m.attrs(h.Addr, h.DC)
			kv := base.ToSlice()
			set := metric.WithAttributeSet(base)
			for i, name := range states {
				o.ObserveInt64(state, int01(int(h.State) == i), metric.WithAttributes(append(kv, attribute.String("mysqlfailover.host.state", name))...))
			}
			for i, name := range roles {
				o.ObserveInt64(role, int01(int(h.Role) == i), metric.WithAttributes(append(kv, attribute.String("mysqlfailover.host.role", name))...))
			}
			o.ObserveInt64(active, int01(h.Addr == s.Active), set)
			o.ObserveInt64(primary, int01(h.Addr == s.Primary), set)
			for i, name := range origins {
				o.ObserveInt64(origin, int01(int(h.Origin) == i), metric.WithAttributes(append(kv, attribute.String("mysqlfailover.host.origin", name))...))
			}
			if h.Origin == failover.OriginDiscovered && !h.Discovered.IsZero() {
				o.ObserveFloat64(discovered, float64(h.Discovered.UnixNano())/1e9, set)
			}
			if h.OpenConns >= 0 {
				o.ObserveInt64(conns, int64(h.OpenConns), set)
			}
			if !replicas {
				continue
			}
			o.ObserveInt64(replica, int01(h.ReplicaSkip == "" && h.State == failover.HostUp), set) // qualifies and is up: not a replica still unknown
			o.ObserveInt64(reads, h.ReplicaReads, set)
			if h.ReplicaLag >= 0 {
				o.ObserveFloat64(lag, h.ReplicaLag.Seconds(), set)
			}
		}
		return nil
	}, state, role, active, primary, conns, failovers, fallBacks, aborts, writer, refusals, callerErrors, twoWriters, replica, lag, reads, retries, toPrimary, causal,
		origin, discovered, discoveryProblem)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Option returns the option that gives m the connector's events
// (mysqlfailover.WithEventHook with Observe). It can be combined with hooks of yours:
// WithEventHook may be given more than once.
func (m *Metrics) Option() mysqlfailover.Option { return mysqlfailover.WithEventHook(m.Observe) }

// SetConnector makes the observable instruments read cn's Stats at each collection. A
// second call replaces the first connector.
func (m *Metrics) SetConnector(cn *mysqlfailover.Connector) {
	m.conn.Store(cn)
	m.learn(cn)
}

// Observe records one event: a passed probe's latency, a failed probe, a walk's duration.
// Other events are ignored. It does not block (it runs in the driver's hook).
func (m *Metrics) Observe(e failover.Event) {
	ctx := context.Background()
	switch e.Kind {
	case failover.EventProbePassed:
		m.probe.Record(ctx, e.Duration.Seconds(), metric.WithAttributeSet(m.attrs(e.Host, "")))
	case failover.EventProbe:
		m.failures.Add(ctx, 1, metric.WithAttributeSet(m.attrs(e.Host, "")))
	case failover.EventSwitch:
		if e.Duration > 0 { // 0: a move without a walk (the monitor's, SwitchTo, host list)
			m.walk.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("mysqlfailover.walk.kind", "switch")))
		}
	case failover.EventFallBack: // every fall-back has its duration (a walk's, or the monitor's wait)
		m.walk.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String("mysqlfailover.walk.kind", "fall_back")))
	case failover.EventHostList, failover.EventDiscovery:
		if cn := m.conn.Load(); cn != nil && (e.Err == nil || e.Kind == failover.EventDiscovery && e.Host != "") { // the list changed
			m.learn(cn)
		}
	}
}

// Close unregisters the observable instruments' callback; the connector is not closed.
// It returns the meter's error, if any.
func (m *Metrics) Close() error { return m.reg.Unregister() }

// learn (re)makes the attribute sets of cn's hosts, with their DC labels, and starts
// each new host's probe.failures at 0.
func (m *Metrics) learn(cn *mysqlfailover.Connector) {
	for _, h := range cn.Stats().Hosts {
		s := hostAttrs(h.Addr, h.DC)
		m.mu.Lock()
		old, known := m.hosts[h.Addr]
		m.hosts[h.Addr] = s
		m.mu.Unlock()
		if !known || !old.Equals(&s) {
			m.failures.Add(context.Background(), 0, metric.WithAttributeSet(s)) // a point at 0 from the start
		}
	}
}

// attrs returns host's attribute set, made with dc the first time the host is seen
// (events carry no DC: SetConnector learns every host's first).
func (m *Metrics) attrs(host, dc string) attribute.Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.hosts[host]; ok {
		return s
	}
	s := hostAttrs(host, dc)
	m.hosts[host] = s
	return s
}

// hostAttrs returns the attributes of host (host:port) with its DC label.
func hostAttrs(host, dc string) attribute.Set {
	name, port, err := net.SplitHostPort(host)
	kv := []attribute.KeyValue{attribute.String("server.address", host), attribute.String("mysqlfailover.dc", dc)}
	if err == nil {
		kv[0] = attribute.String("server.address", name)
		if p, err := strconv.Atoi(port); err == nil {
			kv = append(kv, attribute.Int("server.port", p))
		}
	}
	return attribute.NewSet(kv...)
}

// replicaReads reports whether s is the Stats of a connector with replicaReads: then at
// least the pool's writer has a ReplicaSkip ("the pool's writer"); without it no host has
// one.
func replicaReads(s failover.Stats) bool {
	for _, h := range s.Hosts {
		if h.ReplicaSkip != "" {
			return true
		}
	}
	return false
}

func int01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
