// Package mysqlfailoverprom exports the failover state of a mysqlfailover.Connector as
// Prometheus metrics: a prometheus.Collector that reads (*mysqlfailover.Connector).Stats
// at each scrape and counts the connector's events (probe latency, walk duration,
// failed probes) as they happen.
//
//	col := mysqlfailoverprom.New()
//	c, err := mysqlfailover.NewConnector(cfg, col.Option(), mysqlfailover.WithEventHook(myHook))
//	if err != nil {
//		return err
//	}
//	col.SetConnector(c)
//	prometheus.MustRegister(col)
//	http.Handle("/metrics", promhttp.Handler()) // github.com/prometheus/client_golang/prometheus/promhttp
//	db := sql.OpenDB(c)
//
// (then http.ListenAndServe serves /metrics with every registered collector, this one
// included).
//
// The histograms need the events, so the connector must be built with col.Option();
// a pool opened with sql.Open("mysqlfailover", dsn) gives only the Stats metrics
// (SetConnector with mysqlfailover.ConnectorOf). One Collector serves one Connector: for
// several pools register each collector through prometheus.WrapRegistererWith with a
// label of yours (for example pool="orders").
//
// # Metrics
//
// All are prefixed mysqlfailover_, in base units (seconds); host is host:port as in the
// host list, dc its data-centre label ("" for none).
//
//	mysqlfailover_host_state{host,dc,state}        gauge     1 for the host's state, 0 for the others:
//	                                               unknown, up, suspect, down, backoff, wrong_role,
//	                                               not_ready
//	mysqlfailover_host_role{host,dc,role}          gauge     1 for the role the last role check found, 0 for
//	                                               the others: unknown, primary, read_only_primary, standby
//	                                               (unknown while the host is down or in backoff)
//	mysqlfailover_host_active{host,dc}             gauge     1 for the host the pool uses now (0 for every
//	                                               host while it uses none: its host is down and no
//	                                               walk found another, Stats.Active "")
//	mysqlfailover_host_primary{host,dc}            gauge     1 for the host the pool returns to
//	mysqlfailover_host_connections{host,dc}        gauge     open physical connections, probe connections
//	                                               included (absent when unknown)
//	mysqlfailover_failovers_total                  counter   walks and monitor decisions that moved the pool
//	                                               after a failure
//	mysqlfailover_fall_backs_total                 counter   returns to the primary
//	mysqlfailover_aborts_total                     counter   abort rounds: hosts whose in-flight statements
//	                                               were aborted after probes declared them down
//	mysqlfailover_probe_duration_seconds{host,dc}  histogram latency of each passed probe (checkInterval > 0)
//	mysqlfailover_probe_failures_total{host,dc}    counter   failed probes
//	mysqlfailover_walk_duration_seconds{kind}      histogram duration of each host walk that moved the pool,
//	                                               kind "switch" (a failover) or "fall_back"; under
//	                                               probing (checkInterval > 0) a fall_back sample is how
//	                                               long the primary had passed its probes when the pool
//	                                               returned (switchBackDelay, up to a checkInterval more)
//	mysqlfailover_writer_available                 gauge     1 while the pool can serve writes as far as the
//	                                               driver knows (Stats.WriterAvailable: its host is up, and
//	                                               a writer), 0 while it cannot
//	mysqlfailover_write_refusals_total             counter   writes that could not be served: statements a server
//	                                               refused as read-only (1290, 1836, 1792) and connections
//	                                               or statements that found no host to use, such as no
//	                                               writer for targetSessionAttrs=read-write
//	                                               (Stats.WriteRefusals); it counts attempts
//	mysqlfailover_caller_errors_total              counter   errors the driver returned to callers because a
//	                                               host failed, refused or was missing: a
//	                                               FailoverError, a NoHostAvailableError,
//	                                               ErrTxLost, ErrCommitOutcomeUnknown, a read-only
//	                                               refusal (Stats.CallerErrors); what the
//	                                               application saw
//	mysqlfailover_two_writers                      gauge     1 while more than one host of a replication
//	                                               cluster is writable at once (Stats.Writers: an old
//	                                               primary back unfenced after a promotion, a replica
//	                                               whose read_only was forgotten), 0 otherwise
//	mysqlfailover_host_origin{host,dc,origin}      gauge     1 for where the host came from, 0 for the others:
//	                                               dsn, host_list (hostsURL or a HostListProvider),
//	                                               discovered (discoverHosts: the cluster reported it)
//	mysqlfailover_host_discovered_timestamp_seconds{host,dc}
//	                                               gauge     when discovery found the host (Unix time,
//	                                               HostStats.Discovered); discovered hosts only
//	mysqlfailover_discovery_problem                gauge     1 while discoverHosts finds no host for a reason
//	                                               to act on (Stats.Discovery: the user may not run the
//	                                               query that lists the members, members without an
//	                                               address to dial), 0 otherwise
//
// Every series exists from the first scrape after SetConnector, at 0 until something is
// counted: the per-host probe counter and histogram of each listed host (a host a new
// host list adds gets its series then, one it drops loses them), and the walk histogram
// of both kinds, so that increase() and rate() see the first failures of a burst. A
// host's role reads unknown while it is down (its last role is no longer known).
//
// Two alert rules: one on what callers saw, one on the pool's writes whatever became of
// them. The first fires when the driver returned errors to callers because a host
// failed, refused or was missing:
//
//	increase(mysqlfailover_caller_errors_total[1m]) > 0
//
// It counts what left the driver: not a statement it ran again on the new host, nor a
// write a demoted primary refused that it ran on the new writer. Errors your own
// retries (or RunInTx's, Stats.TxReruns) then absorbed are counted, as they reached
// your code. The second catches a pool whose writes cannot be served, whatever the
// cause (the primary dead and nothing promoted, a demoted primary the DSN still lists
// first, a read-only session on a secondary):
//
//	increase(mysqlfailover_write_refusals_total[1m]) > 0
//
// It counts attempts, not failed writes: each refusal, also one the driver then ran on
// the new writer without an error for its caller, and each retry of a caller again, so
// it may read 5 while the callers saw no failed write. Both, as any increase() over a
// window, keep firing for the window (1 minute here) after the last error; a shorter
// window resolves sooner, and needs a scrape interval well under it.
// mysqlfailover_writer_available == 0 says what the second says before the first write
// is refused, as far as the driver can know (with targetSessionAttrs=any and no probes
// it does not read roles, and counts the list's primary as the writer while it is up).
//
// Another catches a split brain, whose writes do not fail but diverge (it keeps firing
// for 5 minutes after); the event failover.EventTwoWriters and Stats.Writers name the
// hosts and the one to fence:
//
//	max_over_time(mysqlfailover_two_writers[5m]) == 1
//
// With replicaReads (read/write splitting), per host and for the pool:
//
//	mysqlfailover_host_replica{host,dc}              gauge     1 while the host serves read-intent
//	                                                 statements as a replica: it qualifies and is up;
//	                                                 0 while it does not (HostStats.ReplicaSkip says
//	                                                 why), and for a replica not used yet (state
//	                                                 unknown: with checkInterval 0 the pool knows a
//	                                                 replica from its first read there)
//	mysqlfailover_host_replica_lag_seconds{host,dc}  gauge     replication lag as the host's last probe read
//	                                                 it (whole seconds; absent while unknown)
//	mysqlfailover_host_replica_reads_total{host,dc}  counter   read-intent statements the host served as a
//	                                                 replica
//	mysqlfailover_host_replica_idle_sessions{host,dc} gauge    its replica sessions idle in the pool's
//	                                                 shared ones (HostStats.ReplicaIdle)
//	mysqlfailover_host_replica_waits_total{host,dc}  counter   reads that waited for one of its sessions
//	                                                 at replicaPoolSize (HostStats.ReplicaWaits)
//	mysqlfailover_replica_retries_total              counter   read-intent statements that failed on a replica
//	                                                 before their result started and ran again
//	mysqlfailover_replica_to_primary_total           counter   read-intent statements that ran on the primary
//	                                                 because no replica qualified
//	mysqlfailover_causal_reads_total{path}           counter   causal reads (causalReads local or global):
//	                                                 path "waited" (a replica served them after
//	                                                 waiting for the write's position) or "primary"
//	                                                 (they went to the primary instead)
//
// The totals are the connector's own counts since it was built (failover.Stats), so they
// are right even for the events before SetConnector.
//
// The replica metrics are present only for a connector with replicaReads=true, from its
// first scrape on (at 0 until something is counted), and absent without it: a pool that
// does not split reads exports no replica series, not a column of zeros that would read
// as "no replica qualifies". The collector tells from Stats, where with replicaReads at
// least the pool's writer has a ReplicaSkip ("the pool's writer"), and without it every
// host has none. The reason itself is not a label: its text is free-form (it carries the
// lag and the error), so as a label it would make a new series at each change; read it
// from Stats, the EventReplica events, or WithLogger's records.
//
// mysqlfailover_host_replica_lag_seconds needs checkInterval > 0 (the probes read the lag
// with SHOW REPLICA STATUS, or SHOW SLAVE STATUS on older servers; the probe user needs
// REPLICA MONITOR on MariaDB 10.5+, REPLICATION CLIENT on MySQL). A host's sample is
// absent while its lag is unknown: not read yet, not a replica, a replication thread
// stopped (Seconds_Behind_Master NULL), or no privilege; HostStats.ReplicaSkip gives the
// reason when maxReplicaLag makes it matter. Alert on the lag with the absence in mind,
// e.g. absent_over_time(mysqlfailover_host_replica_lag_seconds{host="db2:3306"}[5m]) for
// a replica that should report one.
package mysqlfailoverprom

import (
	"sync"
	"sync/atomic"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/prometheus/client_golang/prometheus"
)

// ProbeBuckets are the upper bounds, in seconds, of mysqlfailover_probe_duration_seconds:
// 0.5 ms to 5 s (a probe is one query's round trip, bounded by the probe timeout).
var ProbeBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// WalkBuckets are the upper bounds, in seconds, of mysqlfailover_walk_duration_seconds:
// 1 ms to 2 min (a walk over dead hosts pays their connect timeouts and 250 ms between
// passes).
var WalkBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// states and roles are the label values of mysqlfailover_host_state and _host_role, in
// the order of failover.HostState and failover.Role.
var (
	states  = []string{"unknown", "up", "suspect", "down", "backoff", "wrong_role", "not_ready"}
	roles   = []string{"unknown", "primary", "read_only_primary", "standby"}
	origins = []string{"dsn", "host_list", "discovered"} // in the order of failover.HostOrigin
)

var (
	descState = prometheus.NewDesc("mysqlfailover_host_state",
		"What the pool believes of the host: 1 for its state, 0 for the others.", []string{"host", "dc", "state"}, nil)
	descRole = prometheus.NewDesc("mysqlfailover_host_role",
		"The role the last role check found on the host (targetSessionAttrs): 1 for it, 0 for the others.", []string{"host", "dc", "role"}, nil)
	descActive = prometheus.NewDesc("mysqlfailover_host_active",
		"1 for the host the pool uses now, 0 for the others (for all while it uses none: its host is down).", []string{"host", "dc"}, nil)
	descPrimary = prometheus.NewDesc("mysqlfailover_host_primary",
		"1 for the host the pool returns to (the primary), 0 for the others.", []string{"host", "dc"}, nil)
	descConns = prometheus.NewDesc("mysqlfailover_host_connections",
		"Physical connections open to the host, probe connections included.", []string{"host", "dc"}, nil)
	descFailovers = prometheus.NewDesc("mysqlfailover_failovers_total",
		"Moves of the pool to another host after a failure.", nil, nil)
	descFallBacks = prometheus.NewDesc("mysqlfailover_fall_backs_total",
		"Returns of the pool to the primary.", nil, nil)
	descAborts = prometheus.NewDesc("mysqlfailover_aborts_total",
		"Abort rounds: hosts whose in-flight statements were aborted after probes declared them down.", nil, nil)
	descWriter = prometheus.NewDesc("mysqlfailover_writer_available",
		"1 while the pool can serve writes as far as the driver knows (its host is up and a writer), 0 while it cannot.", nil, nil)
	descRefusals = prometheus.NewDesc("mysqlfailover_write_refusals_total",
		"Writes that could not be served: statements refused as read-only (1290, 1836, 1792) and connections or statements that found no host (no writer).", nil, nil)
	descCallerErrors = prometheus.NewDesc("mysqlfailover_caller_errors_total",
		"Errors the driver returned to callers because a host failed, refused or was missing (FailoverError, NoHostAvailableError, ErrTxLost, ErrCommitOutcomeUnknown, read-only refusals).", nil, nil)
	descTwoWriters = prometheus.NewDesc("mysqlfailover_two_writers",
		"1 while more than one host of a replication cluster is writable at once (two writers: fence all but the one the replicas follow), 0 otherwise.", nil, nil)
	descOrigin = prometheus.NewDesc("mysqlfailover_host_origin",
		"Where the host came from: 1 for its origin (dsn, host_list, discovered), 0 for the others.", []string{"host", "dc", "origin"}, nil)
	descDiscovered = prometheus.NewDesc("mysqlfailover_host_discovered_timestamp_seconds",
		"When discovery (discoverHosts) found the host, as Unix time; discovered hosts only.", []string{"host", "dc"}, nil)
	descDiscoveryProblem = prometheus.NewDesc("mysqlfailover_discovery_problem",
		"1 while discoverHosts finds no host for a reason to act on (Stats.Discovery says which: a missing privilege, members without an address), 0 otherwise.", nil, nil)

	// The replica metrics (replicaReads only).
	descReplica = prometheus.NewDesc("mysqlfailover_host_replica",
		"1 while the host serves read-intent statements as a replica (replicaReads): it qualifies and is up; 0 while it does not (Stats' ReplicaSkip says why) or is not used yet.", []string{"host", "dc"}, nil)
	descReplicaLag = prometheus.NewDesc("mysqlfailover_host_replica_lag_seconds",
		"Replication lag of the host as its last probe read it (Seconds_Behind_Master or _Source, whole seconds); absent while unknown.", []string{"host", "dc"}, nil)
	descReplicaReads = prometheus.NewDesc("mysqlfailover_host_replica_reads_total",
		"Read-intent statements the host served as a replica.", []string{"host", "dc"}, nil)
	descReplicaIdle = prometheus.NewDesc("mysqlfailover_host_replica_idle_sessions",
		"Replica sessions of the host idle in the pool's shared ones (replicaPoolSize); mysqlfailover_host_connections counts every open one.", []string{"host", "dc"}, nil)
	descReplicaWaits = prometheus.NewDesc("mysqlfailover_host_replica_waits_total",
		"Reads that waited for a session of the host at replicaPoolSize.", []string{"host", "dc"}, nil)
	descReplicaRetries = prometheus.NewDesc("mysqlfailover_replica_retries_total",
		"Read-intent statements that failed on a replica before their result started and ran again on another host.", nil, nil)
	descReplicaToPrimary = prometheus.NewDesc("mysqlfailover_replica_to_primary_total",
		"Read-intent statements that ran on the primary because no replica qualified (readFromSourceWhenNoReplicas).", nil, nil)
	descCausal = prometheus.NewDesc("mysqlfailover_causal_reads_total",
		"Causal reads (causalReads): path waited, served by a replica after it reached the write's position; path primary, sent to the primary instead.", []string{"path"}, nil)
)

// Collector is a prometheus.Collector of one Connector. Its methods are safe for
// concurrent use. Build it with New.
type Collector struct {
	conn     atomic.Pointer[mysqlfailover.Connector]
	mu       sync.Mutex
	dcs      map[string]string // host -> DC label of the listed hosts, for the event metrics
	probe    *prometheus.HistogramVec
	failures *prometheus.CounterVec
	walk     *prometheus.HistogramVec
}

// New returns a Collector with no connector yet (only the event metrics until
// SetConnector).
func New() *Collector {
	c := &Collector{
		dcs: map[string]string{},
		probe: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mysqlfailover_probe_duration_seconds",
			Help:    "Latency of each passed probe (checkInterval > 0), reopening the probe connection included.",
			Buckets: ProbeBuckets,
		}, []string{"host", "dc"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mysqlfailover_probe_failures_total",
			Help: "Failed probes (checkInterval > 0).",
		}, []string{"host", "dc"}),
		walk: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mysqlfailover_walk_duration_seconds",
			Help:    "Duration of each host walk that moved the pool, from its start to the working connection on the new host (kind switch: a failover; fall_back).",
			Buckets: WalkBuckets,
		}, []string{"kind"}),
	}
	for _, kind := range []string{"switch", "fall_back"} {
		c.walk.WithLabelValues(kind) // exported at 0 from the start
	}
	return c
}

// Option returns the option that gives the collector the connector's events
// (mysqlfailover.WithEventHook with Observe). It can be combined with hooks of yours:
// WithEventHook may be given more than once.
func (c *Collector) Option() mysqlfailover.Option { return mysqlfailover.WithEventHook(c.Observe) }

// SetConnector makes the collector read cn's Stats at each scrape. Call it once the
// connector is built; a second call replaces the first connector.
func (c *Collector) SetConnector(cn *mysqlfailover.Connector) {
	c.conn.Store(cn)
	c.learnDCs(cn)
}

// Observe records one event: a passed probe's latency, a failed probe, a walk's duration.
// Other events are ignored. It is fast and does not block (it runs in the driver's hook).
func (c *Collector) Observe(e failover.Event) {
	switch e.Kind {
	case failover.EventProbePassed:
		c.probe.WithLabelValues(e.Host, c.dc(e.Host)).Observe(e.Duration.Seconds())
	case failover.EventProbe:
		c.failures.WithLabelValues(e.Host, c.dc(e.Host)).Inc()
	case failover.EventSwitch:
		if e.Duration > 0 { // 0: a move without a walk (the monitor's, SwitchTo, host list)
			c.walk.WithLabelValues("switch").Observe(e.Duration.Seconds())
		}
	case failover.EventFallBack: // every fall-back has its duration (a walk's, or the monitor's wait)
		c.walk.WithLabelValues("fall_back").Observe(e.Duration.Seconds())
	case failover.EventHostList, failover.EventDiscovery:
		if e.Err == nil || e.Kind == failover.EventDiscovery && e.Host != "" { // the list changed
			c.learnDCs(c.conn.Load())
		}
	}
}

func (c *Collector) dc(host string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dcs[host]
}

// learnDCs learns the DC labels of cn's listed hosts, makes their per-host event series
// (at 0 until counted), and drops those of hosts no longer listed.
func (c *Collector) learnDCs(cn *mysqlfailover.Connector) {
	if cn == nil {
		return
	}
	s := cn.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	listed := map[string]bool{}
	for _, h := range s.Hosts {
		listed[h.Addr] = true
		if old, ok := c.dcs[h.Addr]; ok && old != h.DC {
			c.probe.DeleteLabelValues(h.Addr, old)
			c.failures.DeleteLabelValues(h.Addr, old)
		}
		c.dcs[h.Addr] = h.DC
		c.probe.WithLabelValues(h.Addr, h.DC)
		c.failures.WithLabelValues(h.Addr, h.DC)
	}
	for addr, dc := range c.dcs {
		if !listed[addr] {
			delete(c.dcs, addr)
			c.probe.DeleteLabelValues(addr, dc)
			c.failures.DeleteLabelValues(addr, dc)
		}
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descState, descRole, descActive, descPrimary, descConns, descFailovers, descFallBacks, descAborts, descWriter, descRefusals, descCallerErrors, descTwoWriters,
		descOrigin, descDiscovered, descDiscoveryProblem,
		descReplica, descReplicaLag, descReplicaReads, descReplicaIdle, descReplicaWaits, descReplicaRetries, descReplicaToPrimary, descCausal} {
		ch <- d
	}
	c.probe.Describe(ch)
	c.failures.Describe(ch)
	c.walk.Describe(ch)
}

// Collect implements prometheus.Collector: the connector's Stats now, and the event
// metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.probe.Collect(ch)
	c.failures.Collect(ch)
	c.walk.Collect(ch)
	cn := c.conn.Load()
	if cn == nil {
		return
	}
	collectStats(ch, cn.Stats())
}

// collectStats sends the metrics of the Stats snapshot s.
func collectStats(ch chan<- prometheus.Metric, s failover.Stats) {
	ch <- prometheus.MustNewConstMetric(descFailovers, prometheus.CounterValue, float64(s.Failovers))
	ch <- prometheus.MustNewConstMetric(descFallBacks, prometheus.CounterValue, float64(s.FallBacks))
	ch <- prometheus.MustNewConstMetric(descAborts, prometheus.CounterValue, float64(s.Aborted))
	ch <- prometheus.MustNewConstMetric(descWriter, prometheus.GaugeValue, bool01(s.WriterAvailable))
	ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(s.WriteRefusals))
	ch <- prometheus.MustNewConstMetric(descCallerErrors, prometheus.CounterValue, float64(s.CallerErrors))
	ch <- prometheus.MustNewConstMetric(descTwoWriters, prometheus.GaugeValue, bool01(len(s.Writers) > 1))
	ch <- prometheus.MustNewConstMetric(descDiscoveryProblem, prometheus.GaugeValue, bool01(s.Discovery != ""))
	replicas := replicaReads(s)
	if replicas {
		ch <- prometheus.MustNewConstMetric(descReplicaRetries, prometheus.CounterValue, float64(s.ReplicaRetries))
		ch <- prometheus.MustNewConstMetric(descReplicaToPrimary, prometheus.CounterValue, float64(s.ReplicaToPrimary))
		ch <- prometheus.MustNewConstMetric(descCausal, prometheus.CounterValue, float64(s.CausalWaits), "waited")
		ch <- prometheus.MustNewConstMetric(descCausal, prometheus.CounterValue, float64(s.CausalPrimary), "primary")
	}
	for _, h := range s.Hosts {
		for i, name := range states {
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, bool01(int(h.State) == i), h.Addr, h.DC, name)
		}
		for i, name := range roles {
			ch <- prometheus.MustNewConstMetric(descRole, prometheus.GaugeValue, bool01(int(h.Role) == i), h.Addr, h.DC, name)
		}
		ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, bool01(h.Addr == s.Active), h.Addr, h.DC)
		ch <- prometheus.MustNewConstMetric(descPrimary, prometheus.GaugeValue, bool01(h.Addr == s.Primary), h.Addr, h.DC)
		for i, name := range origins {
			ch <- prometheus.MustNewConstMetric(descOrigin, prometheus.GaugeValue, bool01(int(h.Origin) == i), h.Addr, h.DC, name)
		}
		if h.Origin == failover.OriginDiscovered && !h.Discovered.IsZero() {
			ch <- prometheus.MustNewConstMetric(descDiscovered, prometheus.GaugeValue, float64(h.Discovered.UnixNano())/1e9, h.Addr, h.DC)
		}
		if h.OpenConns >= 0 {
			ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(h.OpenConns), h.Addr, h.DC)
		}
		if !replicas {
			continue
		}
		ch <- prometheus.MustNewConstMetric(descReplica, prometheus.GaugeValue, bool01(serving(h)), h.Addr, h.DC)
		ch <- prometheus.MustNewConstMetric(descReplicaReads, prometheus.CounterValue, float64(h.ReplicaReads), h.Addr, h.DC)
		ch <- prometheus.MustNewConstMetric(descReplicaIdle, prometheus.GaugeValue, float64(h.ReplicaIdle), h.Addr, h.DC)
		ch <- prometheus.MustNewConstMetric(descReplicaWaits, prometheus.CounterValue, float64(h.ReplicaWaits), h.Addr, h.DC)
		if h.ReplicaLag >= 0 {
			ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, h.ReplicaLag.Seconds(), h.Addr, h.DC)
		}
	}
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

// serving reports whether h serves read-intent statements as a replica: it qualifies
// (ReplicaSkip "") and is up. Without probes a replica qualifies before the pool has
// opened a session to it (its state is unknown until then): it is not serving yet, and
// the two gauges do not contradict each other.
func serving(h failover.HostStats) bool {
	return h.ReplicaSkip == "" && h.State == failover.HostUp
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*Collector)(nil)
