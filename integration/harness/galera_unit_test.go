package harness

import (
	"context"
	"strings"
	"testing"
)

func TestParseGrastate(t *testing.T) {
	g, err := parseGrastate("# GALERA saved state\nversion: 2.1\nuuid:    f4a3a40c-edd6-11f1-b927-43d3d71b80ab\nseqno:   -1\nsafe_to_bootstrap: 1\n")
	if err != nil || g.uuid != "f4a3a40c-edd6-11f1-b927-43d3d71b80ab" || g.seqno != -1 || !g.bootstrap {
		t.Fatalf("%+v, %v", g, err)
	}
	g.seqno = 15
	back, err := parseGrastate(g.String())
	if err != nil || back != g {
		t.Errorf("round trip: %+v, %v; want %+v", back, err, g)
	}
	if _, err := parseGrastate("version: 2.1\n"); err == nil {
		t.Error("no uuid: no error")
	}
	if _, err := parseGrastate("uuid: x\nseqno: many\n"); err == nil {
		t.Error("a bad seqno: no error")
	}
}

func TestRecoveredPosition(t *testing.T) {
	for _, tc := range []struct {
		log, uuid string
		seqno     int64
	}{
		{"... [Note] WSREP: Recovered position: f4a3a40c-edd6-11f1-b927-43d3d71b80ab:12\n", "f4a3a40c-edd6-11f1-b927-43d3d71b80ab", 12},
		// wsrep_gtid_mode=ON adds the GTID; the last line wins.
		{"WSREP: Recovered position: a:1\nWSREP: Recovered position: 79bf6f83-edd9-11f1-8bdf-ef3e9310fac2:18,1-1-14\n", "79bf6f83-edd9-11f1-8bdf-ef3e9310fac2", 18},
	} {
		u, s, err := recoveredPosition(tc.log)
		if err != nil || u != tc.uuid || s != tc.seqno {
			t.Errorf("%q: %s:%d, %v; want %s:%d", tc.log, u, s, err, tc.uuid, tc.seqno)
		}
	}
	for _, bad := range []string{"nothing recovered", "WSREP: Recovered position: nocolon", "WSREP: Recovered position: u:x"} {
		if _, _, err := recoveredPosition(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestGaleraViewState(t *testing.T) {
	m := galeraMembers("mysqlfailover-0a1b2c3d", 3)
	if len(m) != 3 || m[0] == m[1] || m[1] == m[2] || len(m[0]) != 36 || m[0][14] != '4' {
		t.Fatalf("members %v: want 3 distinct version-4 UUIDs", m)
	}
	if again := galeraMembers("mysqlfailover-0a1b2c3d", 3); again[2] != m[2] {
		t.Error("members are not derived from the name alone")
	}
	v := galeraViewState(m, 2)
	for _, want := range []string{"my_uuid: " + m[1] + "\n", "view_id: 3 " + m[0] + " 1\n", "member: " + m[0] + " 0\n", "member: " + m[2] + " 0\n", "#vwend\n"} {
		if !strings.Contains(v, want) {
			t.Errorf("view state of node 2 lacks %q:\n%s", want, v)
		}
	}
}

func TestGaleraServerArgs(t *testing.T) {
	spec := NodeSpec{Index: 2, Galera: &GaleraSpec{Name: "c1", Nodes: 3, ProviderOptions: "evs.suspect_timeout=PT5S"}}
	args := strings.Join(galeraServerArgs(spec, "/p.so", []string{"h1:1", "h2:2", "h3:3"}, "h2:2", "gmcast.listen_addr=tcp://h2:2", "h2:9"), " ")
	for _, want := range []string{"--wsrep-on=ON", "--wsrep-provider=/p.so", "--wsrep-cluster-name=c1", "--wsrep-cluster-address=gcomm://h1:1,h2:2,h3:3",
		"--wsrep-node-name=node2", "--wsrep-node-address=h2:2", "--wsrep-sst-method=rsync", "--binlog-format=ROW",
		"--innodb-autoinc-lock-mode=2", "--wsrep-gtid-mode=ON", "--wsrep-gtid-domain-id=1", "--gtid-domain-id=102",
		"--wsrep-sst-receive-address=h2:9", "--wsrep-provider-options=gmcast.listen_addr=tcp://h2:2;" + galeraTuning + ";evs.suspect_timeout=PT5S"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %q: %s", want, args)
		}
	}
}

func TestGaleraNeedsTwoNodes(t *testing.T) {
	if _, err := StartCluster(context.Background(), 1, WithGalera(), WithBackend(noServer{})); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("a 1-node Galera cluster: %v, want an error", err)
	}
}
