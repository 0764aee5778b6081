package cluster

// Transactions run again: the counters and events of mysqlfailover.RunInTx (Stats'
// TxReruns, TxGaveUp, TxCommitChecks; failover.EventTxRerun) and of transaction replay.

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// txCounters are the pool's transaction counters (Stats).
type txCounters struct {
	reruns, gaveUp, checks                atomic.Int64
	replays, mismatches, tooBig, unsafeTx atomic.Int64
}

// ReplayOutcome is how a transaction replay (transactionReplay) ended, for NoteReplay.
type ReplayOutcome int

const (
	// Replayed: the transaction runs again on the new session (Stats.TxReplays).
	Replayed ReplayOutcome = iota
	// ReplayMismatch: a statement's result differed, or it failed, on the new session
	// (Stats.TxReplayMismatches).
	ReplayMismatch
	// ReplayTooBig: the transaction recorded more than transactionReplayMaxSize
	// (Stats.TxReplayTooBig).
	ReplayTooBig
	// ReplayUnsafe: the transaction used what a replay cannot carry (Stats.TxReplayUnsafe).
	ReplayUnsafe
)

// NoteRerun counts a run of a RunInTx function again after cause (Stats.TxReruns) and
// reports it (failover.EventTxRerun, with the pool's host and the wait before it).
func (c *Cluster) NoteRerun(cause error, wait time.Duration) {
	c.tx.reruns.Add(1)
	c.emit(failover.Event{Kind: failover.EventTxRerun, Host: c.Host(c.Active()), Err: cause, Duration: wait})
}

// NoteGaveUp counts a RunInTx that returned a rerunnable error: its attempts were used
// up, or its context ended (Stats.TxGaveUp).
func (c *Cluster) NoteGaveUp() { c.tx.gaveUp.Add(1) }

// NoteCommitCheck counts a commit check run after failover.ErrCommitOutcomeUnknown
// (Stats.TxCommitChecks).
func (c *Cluster) NoteCommitCheck() { c.tx.checks.Add(1) }

// Sleep waits for d on the Cluster's clock, or until ctx ends (ctx.Err()).
func (c *Cluster) Sleep(ctx context.Context, d time.Duration) error {
	return c.env.Clock.Sleep(ctx, d)
}

// NoteReplay counts a transaction replay that ended with outcome, after the session on
// from failed, on host (Stats), and reports it (failover.EventTxReplay; Err is why it
// was not replayed or differed, nil when it was).
func (c *Cluster) NoteReplay(outcome ReplayOutcome, from, host string, why error) {
	switch outcome {
	case Replayed:
		c.tx.replays.Add(1)
	case ReplayMismatch:
		c.tx.mismatches.Add(1)
	case ReplayTooBig:
		c.tx.tooBig.Add(1)
	case ReplayUnsafe:
		c.tx.unsafeTx.Add(1)
	}
	c.emit(failover.Event{Kind: failover.EventTxReplay, Host: host, From: from, Err: why})
}
