package dialect_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

func myErr(n uint16, state string) error {
	e := &mysql.MySQLError{Number: n, Message: "m"}
	copy(e.SQLState[:], state)
	return fmt.Errorf("exec: %w", e)
}

// The server error is the first *mysql.MySQLError of the chain; a typed nil, or none,
// has no number.
func TestServerErrorAndNumber(t *testing.T) {
	var typedNil *mysql.MySQLError
	for _, tc := range []struct {
		err  error
		want uint16
	}{
		{nil, 0}, {errors.New("x"), 0}, {typedNil, 0}, {fmt.Errorf("w: %w", typedNil), 0},
		{myErr(1205, "HY000"), 1205}, {errors.Join(errors.New("x"), myErr(1213, "40001"), myErr(1205, "")), 1213},
	} {
		if got := dialect.Number(tc.err); got != tc.want {
			t.Errorf("Number(%v) = %d, want %d", tc.err, got, tc.want)
		}
		if got := dialect.ServerError(tc.err); (got != nil) != (tc.want != 0) {
			t.Errorf("ServerError(%v) = %v", tc.err, got)
		}
	}
}

// Each predicate is true for its numbers exactly: every number the package names, and
// a few it does not, are asked of each.
func TestPredicates(t *testing.T) {
	preds := []struct {
		name string
		f    func(error) bool
		yes  []uint16
	}{
		{"ShuttingDown", dialect.ShuttingDown, []uint16{1053, 1080}},
		{"PacketTooLarge", dialect.PacketTooLarge, []uint16{1153}},
		{"TooManySessions", dialect.TooManySessions, []uint16{1040, 1203}},
		{"Full", dialect.Full, []uint16{1040, 1203, 1226, 1129}},
		{"ReadOnly", dialect.ReadOnly, []uint16{1290, 1836}},
		{"WriteRefused", dialect.WriteRefused, []uint16{1290, 1836, 1792}},
		{"RolledBack", dialect.RolledBack, []uint16{1213, 3101, 1614}},
		{"Conflict", dialect.Conflict, []uint16{1213, 3101, 1614, 1205}},
		{"NotReady", func(err error) bool { return dialect.NotReady(err) != nil }, []uint16{1047, 3032, 3796, 3799}},
		{"EndsSession (no SQLSTATE)", dialect.EndsSession,
			[]uint16{1040, 1042, 1043, 1053, 1080, 1081, 1152, 1153, 1154, 1155, 1156, 1157, 1158, 1159, 1160, 1161, 1184, 1927, 4031}},
	}
	all := []uint16{1040, 1042, 1043, 1044, 1045, 1047, 1049, 1053, 1064, 1080, 1081, 1094, 1129, 1142,
		1152, 1153, 1154, 1155, 1156, 1157, 1158, 1159, 1160, 1161, 1180, 1184, 1193, 1203, 1205, 1213,
		1226, 1227, 1290, 1614, 1698, 1792, 1836, 1927, 3032, 3101, 3796, 3799, 4031, 1062, 1146, 2013, 0}
	for _, p := range preds {
		yes := map[uint16]bool{}
		for _, n := range p.yes {
			yes[n] = true
		}
		for _, n := range all {
			if got := p.f(myErr(n, "")); got != yes[n] {
				t.Errorf("%s(%d) = %v, want %v", p.name, n, got, yes[n])
			}
		}
		if p.f(nil) || p.f(errors.New("not a server's")) {
			t.Errorf("%s is true for an error that holds no server error", p.name)
		}
	}
}

// SQLSTATE class 08 ends the session whatever the number; another class does not.
func TestEndsSessionClass08(t *testing.T) {
	if !dialect.EndsSession(myErr(1062, "08S01")) || !dialect.EndsSession(myErr(2013, "08000")) {
		t.Error("a class 08 error does not end the session")
	}
	if dialect.EndsSession(myErr(1062, "23000")) || dialect.EndsSession(myErr(1205, "HY000")) {
		t.Error("a data error ends the session")
	}
}

// NotReady names the kind of cluster whose servers send each refusal, as dsn's cluster
// option spells it.
func TestNotReadyCluster(t *testing.T) {
	for n, want := range map[uint16]string{1047: "galera", 3032: "replication", 3796: "group", 3799: "group"} {
		u := dialect.NotReady(myErr(n, "HY000"))
		if u == nil || u.Cluster != want || u.Reason == "" || u.Err.Number != n {
			t.Errorf("NotReady(%d) = %+v, want cluster %q with a reason", n, u, want)
		}
	}
}

// Only the 1180 whose provider status says "Not connected to Primary Component" is a
// lost Primary component.
func TestLostPrimary(t *testing.T) {
	lost := &mysql.MySQLError{Number: 1180, Message: "Got error 6 \"No such device or address\" during COMMIT; Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"}
	if u := dialect.LostPrimary(fmt.Errorf("commit: %w", lost)); u == nil || u.Cluster != "galera" || u.Err != lost {
		t.Errorf("LostPrimary(Galera's 1180) = %+v", u)
	}
	if u := dialect.LostPrimary(&mysql.MySQLError{Number: 1180, Message: "Got error 28 during COMMIT"}); u != nil {
		t.Errorf("LostPrimary(a storage engine's 1180) = %+v, want nil", u)
	}
	if u := dialect.LostPrimary(&mysql.MySQLError{Number: 1047, Message: lost.Message}); u != nil {
		t.Errorf("LostPrimary(1047 with the status) = %+v, want nil", u)
	}
}
