package dsn

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// The option table: everything the package knows of each failover option, from
// which Parse, Validate, NewConfig, FormatDSN, the did-you-mean check for
// misspelt keys and the Options table of the package documentation all come.
// To add or change an option, edit its row (and its Config field), then run
// "go generate ./dsn", which rewrites that table in doc.go; TestOptionsDoc
// fails until it is current.
//
//go:generate go test -run ^TestOptionsDoc$ -update

// option is one failover option: a DSN key of ours, which go-sql-driver never
// sees.
type option struct {
	key     string  // the DSN key (case-sensitive), the one FormatDSN writes
	aliases []alias // other keys Parse takes for it
	field   string  // the Config field, of the Go type kind parses into
	kind    *kind
	def     any // the default, NewConfig's, of the field's type; FormatDSN leaves it out
	// omit reports the other values FormatDSN leaves out, as they mean def
	// (nil: none).
	omit func(c *Config, v any) bool
	// check reports a value of the field that Validate rejects whatever the
	// other options say (nil: none); rules check options against each other.
	check func(o *option, v any) error
	peers []string // the key's spellings in other clients, for the did-you-mean check

	// The Options table's columns beyond key and type: unit ("-" if empty),
	// default (if empty, def as FormatDSN writes it), meaning and the client
	// it comes from ("-" if empty).
	unit, defDoc, meaning, from string
}

// alias is another key of an option (from: the client that names it so).
type alias struct{ key, from string }

// Aliases: Connector/J 8.0.23 renamed ...Master to ...Source and ...Slaves to
// ...Replicas; both names are accepted, and the main one is the Config
// field's.
var (
	cj8023 = "Connector/J 8.0.23+"
	cj51   = "Connector/J 5.1"
)

// options lists every option, in FormatDSN's order and the Options table's.
var options = []option{
	{key: "retriesAllDown", field: "RetriesAllDown", kind: kindCount, def: defaultRetriesAllDown, check: atLeast0("a count"),
		unit: "passes", meaning: "passes over the list, all hosts down", from: "Connector/J"},
	{key: "secondsBeforeRetryMaster", aliases: []alias{{"secondsBeforeRetrySource", cj8023}}, field: "SecondsBeforeRetryMaster",
		kind: kindSeconds, def: defaultSecondsBeforeRetryMaster, check: atLeast0("seconds"),
		unit: "seconds", meaning: "time on a secondary before fall-back", from: "Connector/J"},
	{key: "queriesBeforeRetryMaster", aliases: []alias{{"queriesBeforeRetrySource", cj8023}}, field: "QueriesBeforeRetryMaster",
		kind: kindCount, def: defaultQueriesBeforeRetryMaster, check: atLeast0("a count"),
		unit: "count", meaning: "statements on a secondary, the same", from: "Connector/J"},
	{key: "failOverReadOnly", field: "FailOverReadOnly", kind: kindBool, def: true,
		meaning: "sessions on a secondary read-only", from: "Connector/J"},
	{key: "readOnly", field: "ReadOnly", kind: kindBool, def: false,
		meaning: "every session starts read-only", from: "JDBC setReadOnly"},
	{key: "hostTimeout", field: "HostTimeout", kind: kindDuration, def: defaultHostTimeout, check: durationAtLeast0(" (0: no per-host bound)"),
		meaning: "bound on each host attempt"},
	{key: "targetSessionAttrs", field: "TargetSessionAttrs", kind: kindTarget, def: attrs.Any, omit: omitZero,
		check:   inEnum("dsn: TargetSessionAttrs is %q", targetList+`, or "" (any)`),
		meaning: "which hosts qualify", from: "libpq target_session_attrs"},
	{key: "localDC", field: "LocalDC", kind: kindLabel, def: "", check: checkLocalDC,
		meaning: "data centre whose hosts come first", from: "DataStax localDc"},
	{key: "usedHostsPerRemoteDC", field: "UsedHostsPerRemoteDC", kind: kindCount, def: 0, check: atLeast0("a count"),
		unit: "hosts", meaning: "hosts used of each other DC", from: "DataStax usedHostsPerRemoteDc"},
	{key: "checkInterval", field: "CheckInterval", kind: kindDuration, def: defaultCheckInterval, check: durationAtLeast0(" (0: probing off)"),
		defDoc: "0 (off)", meaning: "probe and hostsURL poll interval", from: "Pulsar"},
	{key: "failoverDelay", field: "FailoverDelay", kind: kindDuration, def: defaultFailoverDelay, check: durationAtLeast0(""),
		meaning: "failing probes before leaving", from: "Pulsar"},
	{key: "switchBackDelay", field: "SwitchBackDelay", kind: kindDuration, def: defaultSwitchBackDelay, check: durationAtLeast0(""),
		meaning: "passing probes before going home", from: "Pulsar"},
	{key: "calmCheckInterval", field: "CalmCheckInterval", kind: kindDuration, def: defaultCalmCheckInterval, check: durationAtLeast0(" (0: every host always on checkInterval's schedule)"),
		meaning: "probe interval of a host that looks well"},
	{key: "hostsURL", field: "HostsURL", kind: kindURL, def: "",
		meaning: "http(s) JSON host list, polled"},
	{key: "hostsToken", field: "HostsToken", kind: kindSecret, def: "",
		meaning: "bearer token sent to hostsURL"},
	{key: "hostsAllowHTTP", field: "HostsAllowHTTP", kind: kindBool, def: false,
		meaning: "plain http to non-loopback hostsURL"},
	{key: "discoverHosts", field: "DiscoverHosts", kind: kindBool, def: false,
		meaning: "hosts the cluster reports join the list", from: "MySQL Router, ProxySQL"},
	{key: "replicaReads", field: "ReplicaReads", kind: kindBool, def: false,
		meaning: "read intent goes to replicas", from: "Connector/J jdbc:mysql:replication:"},
	{key: "maxReplicaLag", field: "MaxReplicaLag", kind: kindDuration, def: time.Duration(0), check: durationAtLeast0(" (0: no bound)"),
		peers:  []string{"max_replication_lag", "max_slave_replication_lag", "maxReplicationLag", "maxSlaveReplicationLag"},
		defDoc: "0 (no bound)", meaning: "lag above it: replica not used", from: "MaxScale max_replication_lag"},
	{key: "replicaSelection", field: "ReplicaSelection", kind: kindSelection, def: selectRoundRobin, omit: omitZero,
		check: inEnum("dsn: replicaSelection=%q", selectionList+` (or "": round-robin)`), peers: []string{"slave_selection_criteria"},
		meaning: "which qualifying replica reads", from: "MaxScale slave_selection_criteria"},
	{key: "replicaPoolSize", field: "ReplicaPoolSize", kind: kindCount, def: 0, check: checkReplicaPoolSize,
		unit: "count", defDoc: "0 (no bound)", meaning: "most sessions open to each replica", from: "ProxySQL max_connections"},
	{key: "readFromSourceWhenNoReplicas", aliases: []alias{{"readFromMasterWhenNoSlaves", cj51}}, field: "ReadFromSourceWhenNoReplicas",
		kind: kindBool, def: true,
		meaning: "no replica: read on the active host", from: cj8023 + " (default false)"},
	{key: "causalReads", field: "CausalReads", kind: kindCausal, def: causalNone, omit: omitZero,
		check:   inEnum("dsn: causalReads=%q", causalList+` (or "": none)`),
		meaning: "replica reads wait for writes", from: "MaxScale causal_reads"},
	{key: "causalReadsTimeout", field: "CausalReadsTimeout", kind: kindPositive, def: defaultCausalReadsTimeout, omit: omitZero,
		check:   func(_ *option, v any) error { return causalTimeout(v.(time.Duration), false) },
		meaning: "bound of that wait, then the active host", from: "MaxScale causal_reads_timeout"},
	{key: "allowSourceDownConnections", aliases: []alias{{"allowMasterDownConnections", cj51}}, field: "AllowSourceDownConnections",
		kind: kindBool, def: true,
		meaning: "replica reads while no writer answers", from: cj8023 + " (default false)"},
	{key: "cluster", field: "Cluster", kind: kindCluster, def: clusterAuto, omit: omitZero,
		check:   inEnum("dsn: cluster=%q", clusterList+` (or "": auto)`),
		meaning: "cluster type: how readiness is read"},
	{key: "transactionReplay", field: "TransactionReplay", kind: kindBool, def: false,
		meaning: "replay a transaction after a failover", from: "MaxScale transaction_replay, MariaDB Connector/J"},
	// Connector/J's transactionReplaySize is a count of statements there.
	{key: "transactionReplayMaxSize", field: "TransactionReplayMaxSize", kind: kindSize, def: defaultTransactionReplayMaxSize, omit: omitZero,
		check: func(_ *option, v any) error { return replayMaxSize(v.(int), false) },
		peers: []string{"transaction_replay_max_size", "transactionReplaySize"},
		unit:  "bytes", meaning: "most a transaction records to replay", from: "MaxScale transaction_replay_max_size"},
	{key: "transactionReplayAttempts", field: "TransactionReplayAttempts", kind: kindCount, def: defaultTransactionReplayAttempts, omit: omitZero,
		check: func(_ *option, v any) error { return replayAttempts(v.(int), false) },
		peers: []string{"transaction_replay_attempts"},
		unit:  "count", meaning: "replays per transaction", from: "MaxScale transaction_replay_attempts"},
	{key: "transactionReplayTimeout", field: "TransactionReplayTimeout", kind: kindDuration, def: defaultTransactionReplayTimeout,
		omit:  func(c *Config, v any) bool { return v == time.Duration(0) && !c.TransactionReplay },
		check: checkReplayTimeout, peers: []string{"transaction_replay_timeout"},
		meaning: "bound of the replays, 0: none", from: "MaxScale transaction_replay_timeout"},
}

// Defaults that messages or tests name (the others are in the table only).
// They are Connector/J 5.1's, MaxScale's for transaction replay, except
// defaultHostTimeout and the probe defaults, which are this package's own
// (only the probe options' names and meanings come from Pulsar).
const (
	defaultRetriesAllDown           = 120
	defaultSecondsBeforeRetryMaster = 30
	defaultQueriesBeforeRetryMaster = 50
	// Five seconds lets a list of several dead hosts be walked well within
	// a typical request deadline.
	defaultHostTimeout                 = 5 * time.Second
	defaultCheckInterval time.Duration = 0
	// minCheckInterval is the shortest CheckInterval other than 0: a
	// shorter one would turn the probes into load on every host.
	minCheckInterval       = 10 * time.Millisecond
	defaultFailoverDelay   = time.Second
	defaultSwitchBackDelay = 30 * time.Second
	// defaultCalmCheckInterval is calmCheckInterval's default: an idle instance costs
	// each host one probe every 2 s.
	defaultCalmCheckInterval = 2 * time.Second
	// Shorter than MaxScale's causal_reads_timeout (10s): the fall-back,
	// the primary, answers at once.
	defaultCausalReadsTimeout        = time.Second
	defaultTransactionReplayMaxSize  = 1 << 20
	defaultTransactionReplayAttempts = 5
	defaultTransactionReplayTimeout  = 30 * time.Second
)

// rules are the checks of options against each other and the hosts, run by
// Validate, in this order, after every option's own check. Messages use the
// DSN keys, as most Configs come from Parse.
var rules = []func(*Config) error{
	(*Config).checkTopology, // localDC, usedHostsPerRemoteDC: the hosts' labels
	(*Config).checkProbing,  // checkInterval, hostsURL, hostsToken, hostsAllowHTTP, discoverHosts
	(*Config).checkReplicas, // replicaPoolSize, causalReads(Timeout), maxReplicaLag: replicaReads, checkInterval
	(*Config).checkReplay,   // transactionReplayMaxSize, transactionReplayAttempts: transactionReplay
}

// get returns o's field of c.
func (o *option) get(c *Config) any {
	return reflect.ValueOf(c).Elem().FieldByName(o.field).Interface()
}

// set sets o's field of c to v, a value of the field's type.
func (o *option) set(c *Config, v any) {
	reflect.ValueOf(c).Elem().FieldByName(o.field).Set(reflect.ValueOf(v))
}

// isDefault reports whether FormatDSN leaves v, o's value in c, out.
func (o *option) isDefault(c *Config, v any) bool {
	return v == o.def || o.omit != nil && o.omit(c, v)
}

// omitZero leaves the zero value out too: "" for an enum, which Validate takes
// as the default, or 0 where Validate takes it only when it means the default.
func omitZero(_ *Config, v any) bool { return reflect.ValueOf(v).IsZero() }

// lookup finds the option of key, a main key or an alias, exactly.
func lookup(key string) *option {
	for i := range options {
		o := &options[i]
		if o.key == key || slices.ContainsFunc(o.aliases, func(a alias) bool { return a.key == key }) {
			return o
		}
	}
	return nil
}

// allKeys returns every key of ours: the main keys in table order, then the
// aliases.
func allKeys() []string {
	var keys, aliases []string
	for _, o := range options {
		keys = append(keys, o.key)
		for _, a := range o.aliases {
			aliases = append(aliases, a.key)
		}
	}
	return append(keys, aliases...)
}

// foldOption finds the key of ours that key equals under Unicode case
// folding, and its option.
func foldOption(key string) (string, *option) {
	for _, k := range allKeys() {
		if strings.EqualFold(k, key) {
			return k, lookup(k)
		}
	}
	return "", nil
}

// atLeast0 is the check of an int field: >= 0, in unit.
func atLeast0(unit string) func(o *option, v any) error {
	return func(o *option, v any) error {
		if n := v.(int); n < 0 {
			return newError(ErrInvalidOption, fmt.Sprintf("dsn: %s is %d: want %s >= 0", o.field, n, unit))
		}
		return nil
	}
}

// durationAtLeast0 is the check of a duration field: >= 0, zero saying what 0
// means.
func durationAtLeast0(zero string) func(o *option, v any) error {
	return func(o *option, v any) error {
		if d := v.(time.Duration); d < 0 {
			return newError(ErrInvalidOption, fmt.Sprintf("dsn: %s is %v: want a duration >= 0%s", o.field, d, zero))
		}
		return nil
	}
}

// inEnum is the check of an enum field: "" or one of the kind's values; what
// starts the message (with the value for %q) and valid lists what is accepted.
func inEnum(what, valid string) func(o *option, v any) error {
	return func(o *option, v any) error {
		if s := v.(string); s != "" && !slices.Contains(o.kind.values, s) {
			return newError(ErrInvalidOption, o.kind.bad(fmt.Sprintf(what, s), s, valid))
		}
		return nil
	}
}

func checkLocalDC(_ *option, v any) error {
	if dc := v.(string); dc != "" && hostaddr.Label(dc) != "" {
		return newError(ErrInvalidOption, fmt.Sprintf("dsn: LocalDC is %q: want a dc label, %s", dc, hostaddr.LabelRule))
	}
	return nil
}

func checkReplicaPoolSize(_ *option, v any) error {
	if n := v.(int); n < 0 {
		return newError(ErrInvalidOption, fmt.Sprintf("dsn: replicaPoolSize=%d: want a count >= 0, the most sessions open to each replica (0: no bound but the pool's own)", n))
	}
	return nil
}

// causalTimeout rejects a CausalReadsTimeout below 0, or 0 when causal reads are on.
func causalTimeout(d time.Duration, on bool) error {
	if d < 0 || d == 0 && on {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: causalReadsTimeout=%v: want a duration > 0, the bound of a replica's wait for the write's position (NewConfig's default is %v)", d, defaultCausalReadsTimeout))
	}
	return nil
}

// replayMaxSize rejects a TransactionReplayMaxSize below 0, or 0 with replay.
func replayMaxSize(n int, replay bool) error {
	if n < 0 || n == 0 && replay {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: transactionReplayMaxSize=%d: want a size in bytes > 0, the most a transaction may record to be replayed (NewConfig's default is %s)", n, formatSize(defaultTransactionReplayMaxSize)))
	}
	return nil
}

// replayAttempts rejects a TransactionReplayAttempts below 0, or 0 with replay.
func replayAttempts(n int, replay bool) error {
	if n < 0 || n == 0 && replay {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: transactionReplayAttempts=%d: want a count > 0, the replays a transaction may have (NewConfig's default is %d)", n, defaultTransactionReplayAttempts))
	}
	return nil
}

func checkReplayTimeout(_ *option, v any) error {
	if d := v.(time.Duration); d < 0 {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: transactionReplayTimeout=%v: want a duration >= 0 (0: only the caller's context)", d))
	}
	return nil
}
