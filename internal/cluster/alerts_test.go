package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// A host that a walk's attempt found of another role (a standby, for read-write) answered:
// nothing looks wrong with it, and it stays calm; a failed attempt puts it on alert, and a
// move of the pool has every host watched.
func TestMonitorRoleSkipStaysCalm(t *testing.T) {
	var a alerts
	now := time.Unix(1000, 0)
	skip := &RoleError{Role: failover.RoleStandby, Wanted: "read-write"}
	for _, kind := range []failover.EventKind{failover.EventConnect, failover.EventHostFailed} {
		a.noteEvent(failover.Event{Kind: kind, Host: "H2:3306", Err: fmt.Errorf("attempt: %w", skip)}, now)
	}
	if host, all := a.holds("H2:3306", now); host || all {
		t.Fatalf("after a role skip: H2 in alert %v, every host %v; want neither", host, all)
	}
	a.noteEvent(failover.Event{Kind: failover.EventConnect, Host: "H2:3306", Err: errors.New("connection refused")}, now)
	if host, _ := a.holds("H2:3306", now); !host {
		t.Fatal("a failed attempt on H2 did not put it on alert")
	}
	if host, _ := a.holds("H2:3306", now.Add(DefaultAlertHold)); host {
		t.Errorf("H2 still in alert DefaultAlertHold after the failed attempt")
	}
	a.noteEvent(failover.Event{Kind: failover.EventSwitch, Host: "H2:3306", From: "H1:3306"}, now)
	if _, all := a.holds("", now); !all {
		t.Error("a switch did not have every host watched")
	}
}
