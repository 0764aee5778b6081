package txtest

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// RunInTx carries transactions through deadlocks under contention: 16 closures update
// two rows, half of them in the opposite order, each 5 times, within 60 s. Deadlocks
// repeat (a victim that runs again meets the same conflict): with the 5 attempts that
// bound failovers, some gave up ("gave up after 5 attempts"); the reruns after a
// conflict have a bound of their own (ConflictAttempts, 50), and every closure commits.
func TestRunInTxUnderContention(t *testing.T) {
	const workers, rounds = 16, 5
	c := harness.Start(t, 1)
	ctx := ctxT(t, 90*time.Second)
	n1 := c.Node(1)
	must(t, n1.Exec(ctx, "CREATE TABLE app.pair (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.pair VALUES (1, 0), (2, 0)"))
	p := openPool(t, c.DSN("innodb_lock_wait_timeout=5"))
	p.db.SetMaxOpenConns(workers)
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	attempts, failed := 0, 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, second := 1, 2
			if w%2 == 1 {
				first, second = 2, 1
			}
			for range rounds {
				err := mysqlfailover.RunInTx(rctx, p.db, nil, func(tx *sql.Tx) error {
					mu.Lock()
					attempts++
					mu.Unlock()
					if _, err := tx.ExecContext(rctx, "UPDATE pair SET v = v + 1 WHERE id = ?", first); err != nil {
						return err
					}
					time.Sleep(2 * time.Millisecond) // the other order takes its first row meanwhile
					_, err := tx.ExecContext(rctx, "UPDATE pair SET v = v + 1 WHERE id = ?", second)
					return err
				})
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					t.Errorf("worker %d: RunInTx: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	s := p.cn.Stats()
	t.Logf("FIGURE %s: transactions=%d attempts=%d reruns=%d gave_up=%d ms=%d", t.Name(), workers*rounds, attempts, s.TxReruns, s.TxGaveUp, time.Since(start).Milliseconds())
	for _, id := range []int{1, 2} {
		v, err := n1.QueryInt(ctx, "SELECT v FROM app.pair WHERE id = ?", id)
		must(t, err)
		if want := int64(workers*rounds - failed); v != want {
			t.Errorf("row %d: v = %d, want %d (each committed transaction once)", id, v, want)
		}
	}
	if failed != 0 || s.TxGaveUp != 0 {
		t.Errorf("%d of %d transactions failed (%d gave up), want none", failed, workers*rounds, s.TxGaveUp)
	}
}
