package main

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// checkData compares the ledger with the primary's tables t.
func checkData(ctx context.Context, c *harness.Cluster, r *result, led *ledger, t tables) {
	present := map[int64]bool{}
	rows, err := c.Primary().Admin().QueryContext(ctx, "SELECT k FROM "+harness.AppDB+"."+t.w)
	if err != nil {
		r.violate("harness", "read %s: %v", t.w, err)
		return
	}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			r.violate("harness", "scan %s: %v", t.w, err)
		}
		present[k] = true
	}
	rows.Close()
	parts := map[int64]int{}
	rows, err = c.Primary().Admin().QueryContext(ctx, "SELECT txid, COUNT(*) FROM "+harness.AppDB+"."+t.tx+" GROUP BY txid")
	if err != nil {
		r.violate("harness", "read %s: %v", t.tx, err)
		return
	}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			r.violate("harness", "scan %s: %v", t.tx, err)
		}
		parts[id] = n
	}
	rows.Close()
	led.mu.Lock()
	defer led.mu.Unlock()
	var nAcked, nNotRun, nUnknown int
	keys := slices.Sorted(maps.Keys(led.writes))
	for _, k := range keys {
		switch led.writes[k] {
		case acked:
			nAcked++
			if !present[k] {
				r.violate("ack-missing", "write %d was acknowledged and is not on the primary", k)
			}
		case notRun:
			nNotRun++
			if present[k] {
				r.violate("not-run-present", "write %d: every attempt said it did not run, and it is on the primary", k)
			}
		default:
			nUnknown++
		}
	}
	for k := range present {
		if _, ok := led.writes[k]; !ok {
			r.violate("unknown-row", "key %d is on the primary and no worker wrote it", k)
		}
	}
	var tAcked, tNotRun, tUnknown int
	for _, id := range slices.Sorted(maps.Keys(led.txs)) {
		n := parts[id]
		if n != 0 && n != 2 {
			r.violate("tx-partial", "transaction %d has %d of its 2 rows", id, n)
		}
		switch led.txs[id] {
		case acked:
			tAcked++
			if n != 2 {
				r.violate("tx-committed-missing", "transaction %d committed and has %d rows", id, n)
			}
		case notRun:
			tNotRun++
			if n != 0 {
				r.violate("tx-lost-present", "transaction %d failed before or with ErrTxLost at commit and has %d rows", id, n)
			}
		default:
			tUnknown++
		}
	}
	fmt.Printf("soak: writes acked=%d not-run=%d unknown=%d (rows %d); transactions committed=%d not=%d unknown=%d\n",
		nAcked, nNotRun, nUnknown, len(present), tAcked, tNotRun, tUnknown)
}

// checkSessions: no session of the soak user left on any server after db.Close (the
// server may take a moment to notice a closed socket: up to 3 s).
func checkSessions(ctx context.Context, c *harness.Cluster, r *result) {
	deadline := time.Now().Add(3 * time.Second)
	for _, n := range c.Nodes() {
		for {
			cnt, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", soakUser)
			if err != nil {
				r.violate("harness", "processlist of node %d: %v", n.Index(), err)
				break
			}
			if cnt == 0 {
				break
			}
			if time.Now().After(deadline) {
				r.violate("sessions", "node %d has %d sessions of %s after db.Close: %s", n.Index(), cnt, soakUser, sessions(ctx, n))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func sessions(ctx context.Context, n *harness.Node) string {
	rows, err := n.Admin().QueryContext(ctx, "SELECT ID, COMMAND, TIME, COALESCE(STATE, ''), COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE USER = ?", soakUser)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, t int64
		var cmd, state, info string
		if rows.Scan(&id, &cmd, &t, &state, &info) == nil {
			out = append(out, fmt.Sprintf("[id %d %s %ds %q %q]", id, cmd, t, state, info))
		}
	}
	return strings.Join(out, " ")
}

// sabotage is what -sabotage (TestSoakFindsViolations) planted, to be undone after the
// checks.
type sabotage struct {
	extra   *sql.DB       // a session of the soak user left open
	release chan struct{} // ends a goroutine left running
}

// sabotageRun plants one instance of most violations, so that a test can see the checks
// find them: an acknowledged row deleted, a committed transaction cut in half, a row for
// a write that did not run, a call that matched driver.ErrBadConn, an overlong call, the
// password in a log line, a session and a goroutine left behind. (Worker 0's first key
// was inserted before the workload started: a 1062 on a first attempt.)
func sabotageRun(ctx context.Context, c *harness.Cluster, r *result, w *workload, led *ledger, lg io.Writer) (*sabotage, error) {
	p := c.Primary()
	led.mu.Lock()
	var ack, notrun, tx int64 = -1, -1, -1
	for _, k := range slices.Sorted(maps.Keys(led.writes)) {
		switch o := led.writes[k]; {
		case o == acked && ack < 0 && k != 1:
			ack = k
		case o == notRun && notrun < 0:
			notrun = k
		}
	}
	for _, id := range slices.Sorted(maps.Keys(led.txs)) {
		if led.txs[id] == acked {
			tx = id
			break
		}
	}
	if notrun < 0 { // no write failed: make one up
		notrun = 99_000_000_000
		led.writes[notrun] = notRun
	}
	led.mu.Unlock()
	if ack < 0 || tx < 0 {
		return nil, fmt.Errorf("sabotage: no acknowledged write (%d) or committed transaction (%d) to spoil", ack, tx)
	}
	for _, q := range []string{
		fmt.Sprintf("DELETE FROM %s.soak_w WHERE k = %d", harness.AppDB, ack),
		fmt.Sprintf("DELETE FROM %s.soak_tx WHERE txid = %d AND part = 2", harness.AppDB, tx),
		fmt.Sprintf("INSERT INTO %s.soak_w VALUES (%d, 0, 0)", harness.AppDB, notrun),
	} {
		if err := p.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	r.record("pool", "sabotage: ErrBadConn", 0, fmt.Errorf("sabotage: %w", sqldriver.ErrBadConn), w.b["pool"])
	r.record("pool", "sabotage: slow", w.b["pool"]+time.Second, nil, w.b["pool"])
	fmt.Fprintf(lg, "sabotage: password=%s\n", soakPassword)
	extra, err := sql.Open("mysql", soakUser+":"+soakPassword+"@tcp("+p.Addr()+")/"+harness.AppDB)
	if err != nil {
		return nil, err
	}
	if err := extra.PingContext(ctx); err != nil {
		extra.Close()
		return nil, err
	}
	sb := &sabotage{extra: extra, release: make(chan struct{})}
	go func() { <-sb.release }()
	return sb, nil
}
