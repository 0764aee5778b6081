package dsn

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The Parse table (parseTests) has the rows for replicaReads, maxReplicaLag,
// replicaSelection, readFromSourceWhenNoReplicas (and its alias),
// causalReads and causalReadsTimeout, so TestParse, TestRoundTrip,
// TestRedaction and FuzzParse's seeds cover them; TestValidate has the
// hand-built ones. This file tests the rest.

// TestFormatDSNReplicas pins FormatDSN for hand-built Configs with the
// read/write splitting options: after the others in table order, defaults
// left out, the alias written under the main name.
func TestFormatDSNReplicas(t *testing.T) {
	withHosts := func() *Config {
		c := NewConfig()
		c.Hosts = []Host{{Name: "db1", Port: 3306}, {Name: "db2", Port: 3306}}
		return c
	}
	tests := []struct {
		name string
		c    *Config
		want string
	}{
		{"defaults", withHosts(), "tcp(db1:3306,db2:3306)/"},
		{"all options", func() *Config {
			c := withHosts()
			c.MySQL.User, c.MySQL.Passwd, c.MySQL.DBName = "app", "pw", "shop"
			c.CheckInterval, c.HostsAllowHTTP = time.Second, true
			c.ReplicaReads, c.MaxReplicaLag, c.ReplicaSelection = true, 1500*time.Millisecond, "least-in-flight"
			c.ReadFromSourceWhenNoReplicas, c.CausalReads, c.CausalReadsTimeout = false, "global", 2*time.Minute
			return c
		}(), "app:pw@tcp(db1:3306,db2:3306)/shop?checkInterval=1s&hostsAllowHTTP=true&replicaReads=true&maxReplicaLag=1.5s" +
			"&replicaSelection=least-in-flight&readFromSourceWhenNoReplicas=false&causalReads=global&causalReadsTimeout=2m0s"},
		{"replicaReads only", func() *Config {
			c := withHosts()
			c.ReplicaReads = true
			return c
		}(), "tcp(db1:3306,db2:3306)/?replicaReads=true"},
		{"explicit defaults left out", func() *Config {
			c := withHosts()
			c.ReplicaReads, c.ReplicaSelection, c.CausalReads, c.CausalReadsTimeout = true, "round-robin", "none", time.Second
			return c
		}(), "tcp(db1:3306,db2:3306)/?replicaReads=true"},
		{"causalReads=local after go-sql-driver params", func() *Config {
			c := withHosts()
			c.MySQL.ParseTime = true
			c.ReplicaReads, c.CausalReads = true, "local"
			return c
		}(), "tcp(db1:3306,db2:3306)/?parseTime=true&replicaReads=true&causalReads=local"},
		{"no fall-back to the primary", func() *Config {
			c := withHosts()
			c.ReadFromSourceWhenNoReplicas = false
			return c
		}(), "tcp(db1:3306,db2:3306)/?readFromSourceWhenNoReplicas=false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidFormat(t, tt.c, tt.want)
		})
	}

	// The alias is written under the main name.
	c, err := Parse("tcp(db1,db2)/?readFromMasterWhenNoSlaves=false")
	if err != nil {
		t.Fatal(err)
	}
	want(t, "FormatDSN of the alias", c.FormatDSN(), "tcp(db1:3306,db2:3306)/?readFromSourceWhenNoReplicas=false")
}

// TestReplicaZeroValues: a hand-built Config's "" ReplicaSelection and
// CausalReads, and its CausalReadsTimeout of 0 without causal reads, are
// valid and left out by FormatDSN, so they come back as the defaults they
// mean; a zero Config's ReadFromSourceWhenNoReplicas, false, is written.
func TestReplicaZeroValues(t *testing.T) {
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	c.ReplicaReads, c.ReplicaSelection, c.CausalReads, c.CausalReadsTimeout = true, "", "", 0
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want(t, "FormatDSN", c.FormatDSN(), "tcp(db1:3306)/?replicaReads=true")
	back, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	want(t, "ReplicaSelection", back.ReplicaSelection, "round-robin")
	want(t, "CausalReads", back.CausalReads, "none")
	want(t, "CausalReadsTimeout", back.CausalReadsTimeout, time.Second)

	// "" with causal reads on is "none": the timeout may stay 0.
	c.CausalReads = "local"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "causalReadsTimeout=0s") {
		t.Errorf("Validate with causalReads=local and no timeout: %v", err)
	}

	z := NewConfig()
	z.Hosts = c.Hosts
	z.ReadFromSourceWhenNoReplicas = false
	want(t, "FormatDSN", z.FormatDSN(), "tcp(db1:3306)/?readFromSourceWhenNoReplicas=false")
	checkRoundTrip(t, z)
}

// TestReplicaValues: the value lists match the texts messages give, and each
// value parses, formats (except the default) and round-trips.
func TestReplicaValues(t *testing.T) {
	want(t, "selectionList", strings.Join(selections, " or "), selectionList)
	want(t, "causalList", strings.Join(causalModes[:len(causalModes)-1], ", ")+" or "+causalModes[len(causalModes)-1], causalList)
	for _, tt := range []struct {
		key, value, def string
		get             func(*Config) string
	}{
		{"replicaSelection", "round-robin", "round-robin", func(c *Config) string { return c.ReplicaSelection }},
		{"replicaSelection", "least-in-flight", "round-robin", func(c *Config) string { return c.ReplicaSelection }},
		{"causalReads", "none", "none", func(c *Config) string { return c.CausalReads }},
		{"causalReads", "local", "none", func(c *Config) string { return c.CausalReads }},
		{"causalReads", "global", "none", func(c *Config) string { return c.CausalReads }},
	} {
		c, err := Parse("tcp(h1,h2)/?replicaReads=true&" + tt.key + "=" + tt.value)
		if err != nil {
			t.Fatalf("Parse with %s=%s: %v", tt.key, tt.value, err)
		}
		want(t, tt.key, tt.get(c), tt.value)
		wantDSN := "tcp(h1:3306,h2:3306)/?replicaReads=true"
		if tt.value != tt.def {
			wantDSN += "&" + tt.key + "=" + tt.value
		}
		want(t, "FormatDSN", c.FormatDSN(), wantDSN)
		checkRoundTrip(t, c)
	}
}

// TestReplicaNearMisses: the new keys catch their misspellings (MaxScale's
// snake_case names included), but no go-sql-driver parameter, nor system
// variables near them.
func TestReplicaNearMisses(t *testing.T) {
	for _, k := range []string{
		"wsrep_causal_reads", "wsrep_sync_wait", "slave_net_timeout", "replica_net_timeout", "max_execution_time",
		"read_buffer_size", "gtid_next", "session_track_gtids", "read_rnd_buffer_size",
	} {
		if n := nearMiss(k); n != "" {
			t.Errorf("system variable %q is taken for a near miss of %q", k, n)
		}
	}
	for k, w := range map[string]string{
		"ReplicaReads": "replicaReads", "replica_reads": "replicaReads", "maxReplicaLags": "maxReplicaLag",
		"replicaselection": "replicaSelection", "causal_reads": "causalReads", "causal_reads_timeout": "causalReadsTimeout",
		"readFromSourceWhenNoReplica": "readFromSourceWhenNoReplicas", "readfrommasterwhennoslaves": "readFromMasterWhenNoSlaves",
		"causalReadTimeout": "causalReadsTimeout",
		// MaxScale's and ProxySQL's names (option.peers).
		"max_replication_lag": "maxReplicaLag", "max_slave_replication_lag": "maxReplicaLag",
		"maxReplicationLag": "maxReplicaLag", "slave_selection_criteria": "replicaSelection",
	} {
		want(t, fmt.Sprintf("nearMiss(%q)", k), nearMiss(k), w)
	}
}

// TestReplicaMessages: a bad value is answered with the value meant when it
// differs only in spelling, or the list of values.
func TestReplicaMessages(t *testing.T) {
	for s, w := range map[string]string{
		"Least-In-Flight": `did you mean "least-in-flight"?`, "least in flight": `did you mean "least-in-flight"?`,
		"least_current_operations": `did you mean "least-in-flight"?`, "roundrobin": `did you mean "round-robin"?`,
		"random": "want round-robin or least-in-flight", "": "want round-robin or least-in-flight",
	} {
		if m := badSelection("x", s, selectionList); !strings.Contains(m, w) {
			t.Errorf("badSelection(%q) = %q, want it to contain %q", s, m, w)
		}
	}
	for s, w := range map[string]string{
		"NONE": `did you mean "none"?`, "Global": `did you mean "global"?`, "fast": "not offered", "FAST_UNIVERSAL": "not offered",
		"on": "want none, local or global", "": "want none, local or global",
	} {
		if m := badCausal("x", s, causalList); !strings.Contains(m, w) {
			t.Errorf("badCausal(%q) = %q, want it to contain %q", s, m, w)
		}
	}
}

// TestReplicaPoolSize: replicaPoolSize parses as a count, is written after
// replicaSelection and round-trips; 0 (the default) is left out; a bound without
// replicaReads, or a negative one in a hand-built Config, is an error naming the key.
func TestReplicaPoolSize(t *testing.T) {
	c, err := Parse("tcp(h1,h2)/?replicaReads=true&replicaPoolSize=8&replicaSelection=least-in-flight")
	if err != nil {
		t.Fatal(err)
	}
	want(t, "ReplicaPoolSize", c.ReplicaPoolSize, 8)
	want(t, "FormatDSN", c.FormatDSN(), "tcp(h1:3306,h2:3306)/?replicaReads=true&replicaSelection=least-in-flight&replicaPoolSize=8")
	checkRoundTrip(t, c)
	if c, err = Parse("tcp(h1,h2)/?replicaReads=true&replicaPoolSize=0"); err != nil {
		t.Fatal(err)
	}
	want(t, "FormatDSN of 0", c.FormatDSN(), "tcp(h1:3306,h2:3306)/?replicaReads=true")
	for dsnStr, msg := range map[string]string{
		"tcp(h1,h2)/?replicaPoolSize=4":                    "replicaPoolSize=4 needs replicaReads=true",
		"tcp(h1,h2)/?replicaReads=true&replicaPoolSize=-1": "replicaPoolSize",
		"tcp(h1,h2)/?replicaReads=true&replicaPoolSize=x":  "replicaPoolSize",
	} {
		if _, err := Parse(dsnStr); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Parse(%q): %v, want an error with %q", dsnStr, err, msg)
		}
	}
	h := NewConfig()
	h.Hosts = []Host{{Name: "db1", Port: 3306}}
	h.ReplicaReads, h.ReplicaPoolSize = true, -2
	if err := h.Validate(); err == nil || !strings.Contains(err.Error(), "replicaPoolSize=-2") {
		t.Errorf("Validate with ReplicaPoolSize -2: %v", err)
	}
}
