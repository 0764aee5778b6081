package mysqlfailover

import (
	"context"

	"github.com/mysqlfailover/mysqlfailover/internal/conn"
)

// WithReadIntent returns a copy of ctx that marks the statements run with it (ExecContext,
// QueryContext) as reads that a replica may serve, when the DSN sets replicaReads=true;
// without it the mark changes nothing. A transaction goes to a replica only when it says
// so itself: sql.TxOptions{ReadOnly: true}, or a connection after SetReadOnly(true); a
// read-write BeginTx with this context stays on the primary, where its writes work (the
// key still picks the replica of a read-only one). A replica session is read-only: a
// write sent there with a read intent fails with the server's read-only error (1290 or
// 1792). The driver never guesses intent from SQL: only what carries an intent leaves
// the primary, and only plain statements outside a transaction, with autocommit on (not
// USE, SET, BEGIN, COMMIT, CREATE or DROP TEMPORARY TABLE, or a batch; nor one that names
// a user variable, calls GET_LOCK or RELEASE_LOCK, or reads LAST_INSERT_ID(), ROW_COUNT()
// or FOUND_ROWS(): that state is the primary session's), and none, read-only
// transactions included, while the connection's session holds a temporary table it
// created (a replica has not got it), until it drops it.
//
// routingKey ("" for none) chooses the replica: the qualifying replicas of the local DC are
// ranked by rendezvous (highest random weight) hashing of the key, so that one key keeps
// to one replica, and its buffer pool, while that replica qualifies, and when it stops only
// its keys move (the order of the DataStax driver's TokenAwarePolicy). Without a key,
// replicaSelection spreads the reads (round-robin by default).
//
// A statement that uses a user variable (@name) stays on the primary too: the replica
// sessions are shared by the pool's connections, and one would keep the variable for the
// next connection (or read one the primary session set, not it). A named lock
// (GET_LOCK) is not looked for: give such a statement no read intent.
func WithReadIntent(ctx context.Context, routingKey string) context.Context {
	return conn.WithReadIntent(ctx, routingKey)
}
