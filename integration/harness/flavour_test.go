package harness

import (
	"slices"
	"strings"
	"testing"
)

// The statements each flavour generates, checked without a server: CI here runs
// MariaDB only, so this is the only check of the MySQL ones.
func TestFlavourStatements(t *testing.T) {
	src := replicaSource{host: "mysqlfailover-ab-n1", port: 3306, user: "repl", password: "replpw"}
	cur := src
	cur.current = true
	for _, tc := range []struct {
		f                      Flavour
		point, pointCurrent    []string
		stop, forget           []string
		readOnly, readWrite    string
		executed, wait, status string
		args                   []string
		sqlStop, sqlStart      string
		lag                    string
		delay                  []string
		threads                []string
		forgetAll              []string
	}{
		{
			f: MariaDB,
			point: []string{"CHANGE MASTER TO MASTER_HOST='mysqlfailover-ab-n1', MASTER_PORT=3306, MASTER_USER='repl', " +
				"MASTER_PASSWORD='replpw', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1", "START SLAVE"},
			pointCurrent: []string{"CHANGE MASTER TO MASTER_HOST='mysqlfailover-ab-n1', MASTER_PORT=3306, MASTER_USER='repl', " +
				"MASTER_PASSWORD='replpw', MASTER_USE_GTID=current_pos, MASTER_CONNECT_RETRY=1", "START SLAVE"},
			stop:     []string{"STOP SLAVE"},
			forget:   []string{"STOP SLAVE", "RESET SLAVE ALL"},
			readOnly: "SET GLOBAL read_only = ON", readWrite: "SET GLOBAL read_only = OFF",
			executed: "SELECT @@GLOBAL.gtid_binlog_pos", wait: "SELECT MASTER_GTID_WAIT(?, ?)", status: "SHOW SLAVE STATUS",
			args:    []string{"--server-id=7", "--log-bin=mysql-bin", "--log-slave-updates=ON", "--port=3306"},
			sqlStop: "STOP SLAVE SQL_THREAD", sqlStart: "START SLAVE SQL_THREAD",
			lag:       "Seconds_Behind_Master",
			delay:     []string{"STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY=3", "START SLAVE"},
			threads:   []string{"Slave_IO_Running", "Slave_SQL_Running", "Gtid_IO_Pos"},
			forgetAll: []string{"RESET MASTER", "SET GLOBAL gtid_slave_pos = ''"},
		},
		{
			f: MySQL,
			point: []string{"CHANGE REPLICATION SOURCE TO SOURCE_HOST='mysqlfailover-ab-n1', SOURCE_PORT=3306, SOURCE_USER='repl', " +
				"SOURCE_PASSWORD='replpw', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, GET_SOURCE_PUBLIC_KEY=1", "START REPLICA"},
			pointCurrent: []string{"CHANGE REPLICATION SOURCE TO SOURCE_HOST='mysqlfailover-ab-n1', SOURCE_PORT=3306, SOURCE_USER='repl', " +
				"SOURCE_PASSWORD='replpw', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, GET_SOURCE_PUBLIC_KEY=1", "START REPLICA"},
			stop:     []string{"STOP REPLICA"},
			forget:   []string{"STOP REPLICA", "RESET REPLICA ALL"},
			readOnly: "SET GLOBAL super_read_only = ON", readWrite: "SET GLOBAL read_only = OFF",
			executed: "SELECT @@GLOBAL.gtid_executed", wait: "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)", status: "SHOW REPLICA STATUS",
			args:    []string{"--server-id=7", "--log-bin=mysql-bin", "--gtid-mode=ON", "--enforce-gtid-consistency=ON", "--log-replica-updates=ON", "--port=3306"},
			sqlStop: "STOP REPLICA SQL_THREAD", sqlStart: "START REPLICA SQL_THREAD",
			lag:     "Seconds_Behind_Source",
			delay:   []string{"STOP REPLICA", "CHANGE REPLICATION SOURCE TO SOURCE_DELAY=3", "START REPLICA"},
			threads: []string{"Replica_IO_Running", "Replica_SQL_Running", "Retrieved_Gtid_Set"},
		},
	} {
		t.Run(tc.f.String(), func(t *testing.T) {
			eq := func(what string, got, want []string) {
				t.Helper()
				if !slices.Equal(got, want) {
					t.Errorf("%s:\n got %q\nwant %q", what, got, want)
				}
			}
			eq("pointReplica", tc.f.pointReplica(src), tc.point)
			eq("pointReplica(current)", tc.f.pointReplica(cur), tc.pointCurrent)
			eq("stopReplica", tc.f.stopReplica(false), tc.stop)
			eq("stopReplica(forget)", tc.f.stopReplica(true), tc.forget)
			eq("setReadOnly", []string{tc.f.setReadOnly(true), tc.f.setReadOnly(false)}, []string{tc.readOnly, tc.readWrite})
			eq("GTID", []string{tc.f.gtidExecutedQuery(), tc.f.waitGTIDQuery()}, []string{tc.executed, tc.wait})
			eq("replicaDelay", tc.f.replicaDelay(3), tc.delay)
			eq("replicaSQLThread", []string{tc.f.replicaSQLThread(false), tc.f.replicaSQLThread(true)}, []string{tc.sqlStop, tc.sqlStart})
			eq("lagColumn", []string{tc.f.lagColumn()}, []string{tc.lag})
			io, sqlThread, received := tc.f.threadColumns()
			eq("threadColumns", []string{io, sqlThread, received}, tc.threads)
			eq("forgetTransactions", tc.f.forgetTransactions(), tc.forgetAll)
			if q, _ := tc.f.replicaStatus(); q != tc.status {
				t.Errorf("replicaStatus = %q, want %q", q, tc.status)
			}
			args := tc.f.serverArgs(7, 3306)
			for _, a := range tc.args {
				if !slices.Contains(args, a) {
					t.Errorf("serverArgs lacks %s: %q", a, args)
				}
			}
			other := "--log-slave-updates=ON"
			if tc.f == MariaDB {
				other = "--gtid-mode=ON"
			}
			if slices.Contains(args, other) {
				t.Errorf("serverArgs has the other flavour's %s", other)
			}
		})
	}
}

// mariadbCovers is MASTER_GTID_WAIT's test read from any position: per domain, a
// sequence number at least the wanted one, whichever server wrote it.
func TestMariaDBCovers(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{
		{"0-1-8", "0-1-8", true}, // a former primary holds what it wrote itself
		{"0-2-9", "0-1-8", true},
		{"0-1-8", "0-2-9", false},
		{"0-1-8", "", true},
		{"", "0-1-1", false},
		{"0-1-8,1-3-2", "1-3-2, 0-1-5", true},
		{"0-1-8", "0-1-8,1-3-2", false}, // a domain have lacks
		{"0-1-11", "0-1-10", true},
		{"0-1-10", "0-1-11", false}, // a write the other lacks
	} {
		ok, err := mariadbCovers(tc.have, tc.want)
		if err != nil || ok != tc.ok {
			t.Errorf("mariadbCovers(%q, %q) = %v, %v; want %v", tc.have, tc.want, ok, err, tc.ok)
		}
	}
	for _, bad := range []string{"0-1", "a-1-2", "0-1-2-3"} {
		if _, err := mariadbCovers(bad, "0-1-1"); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("mariadbCovers(%q): %v, want an error naming it", bad, err)
		}
	}
}

func TestFlavourOf(t *testing.T) {
	for v, want := range map[string]Flavour{
		"10.11.19-MariaDB-0+deb12u1-log": MariaDB, "11.4.3-MariaDB-ubu2404": MariaDB, "8.4.3": MySQL, "8.0.39-log": MySQL,
	} {
		if got := FlavourOf(v); got != want {
			t.Errorf("FlavourOf(%q) = %v, want %v", v, got, want)
		}
	}
	for ref, want := range map[string]Flavour{
		"mysqlfailover-mariadb:d916b8889212": MariaDB, "mariadb:11.4": MariaDB, "mysql:8.4": MySQL,
		"container-registry.oracle.com/mysql/community-server:8.4": MySQL, "docker.io/library/mysql@sha256:ab": MySQL,
	} {
		if got := flavourOfImage(ref); got != want {
			t.Errorf("flavourOfImage(%q) = %v, want %v", ref, got, want)
		}
	}
	if s := AutoFlavour.String() + MariaDB.String() + MySQL.String(); !strings.EqualFold(s, "automariadbmysql") {
		t.Errorf("names: %s", s)
	}
}

func TestFlavourMonitorGrant(t *testing.T) {
	for f, want := range map[Flavour]string{
		MariaDB: "GRANT SLAVE MONITOR ON *.* TO 'app'@'%'",
		MySQL:   "GRANT REPLICATION CLIENT ON *.* TO 'app'@'%'",
	} {
		if got := f.monitorGrant("'app'@'%'"); got != want {
			t.Errorf("%s: %q, want %q", f, got, want)
		}
		revoke := strings.Replace(strings.Replace(want, "GRANT", "REVOKE", 1), " TO ", " FROM ", 1)
		if got := f.monitorRevoke("'app'@'%'"); got != revoke {
			t.Errorf("%s: %q, want %q", f, got, revoke)
		}
	}
}
