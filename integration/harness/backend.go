package harness

import (
	"context"
	"errors"
	"sync"
)

// Backend starts database servers for a Cluster. The scenarios never see it: they use the
// Cluster and its Nodes, so the same scenarios run unchanged on any Backend. LocalBackend
// runs local processes; a container backend (testcontainers-go) implements the same two
// methods.
//
// A Backend belongs to one Cluster, which closes it.
type Backend interface {
	// StartNode starts a fresh, empty server for node spec.Index and returns once it
	// answers on Instance.AdminDSN.
	StartNode(ctx context.Context, spec NodeSpec) (Instance, error)
	// Close stops every instance still running and removes what the backend created.
	Close() error
}

// NodeSpec says which server to start.
type NodeSpec struct {
	// Index is the node's number in the cluster, from 1; node 1 is the primary.
	Index int
	// ServerID is the server_id to run with, unique in the cluster.
	ServerID int
	// Args are extra server options for this node only (WithNodeArgs), in mariadbd's
	// command-line syntax ("--ssl-cert=/path", "--max-connections=20"). A backend applies
	// them on every start of the node, restarts included, after its own options, so that
	// they win; one that cannot pass options (a fixed container image) must fail
	// StartNode rather than ignore them.
	Args []string
	// Galera, when not nil, makes the server a member of a Galera cluster (WithGalera),
	// started at the same time as the others: StartNode then returns once the nodes have
	// formed the cluster and root can log in. A backend that cannot run Galera must fail
	// StartNode.
	Galera *GaleraSpec
	// Join, with Galera, starts the node as one more member of the running cluster
	// (Cluster.AddNode): no saved primary component, its state from a running node (IST,
	// or a full state transfer). A backend that cannot must fail StartNode.
	Join bool
}

// Instance is one server a Backend started. Replication, users, read_only and every
// check are done by the Cluster over AdminDSN, so they are the same for every backend.
type Instance interface {
	// Addr is the host:port the test process dials to reach the server directly: the
	// upstream of its proxy and the address of the admin connection.
	Addr() string
	// SourceAddr is the host and port other instances of the same backend use to
	// replicate from this one.
	SourceAddr() (host string, port int)
	// AdminDSN is a go-sql-driver DSN (no database, no parameters) for a user with every
	// privilege, straight to Addr.
	AdminDSN() string

	// Kill ends the server at once (SIGKILL: no shutdown, sockets closed by the kernel).
	// A frozen server is thawed first. Killing a server that is not running is a no-op.
	Kill() error
	// Freeze suspends the server (SIGSTOP): its sockets stay open and nothing answers.
	Freeze() error
	// Thaw resumes a frozen server (SIGCONT).
	Thaw() error
	// Stop shuts the server down cleanly (SIGTERM) and waits for it to exit.
	Stop(ctx context.Context) error
	// Start starts a server that was killed or stopped again, on the same address and
	// data, and returns once it answers.
	Start(ctx context.Context) error
}

// ErrNoServer is matched (errors.Is) by the error of a Backend that finds no server
// binary it can run. Start skips the test on it, or fails it when CI=true.
var ErrNoServer = errors.New("no MariaDB server binary found (install one: `apt-get install mariadb-server` on Debian/Ubuntu, `brew install mariadb` on macOS, or point MYSQLFAILOVER_MYSQLD at a mariadbd)")

// Partitioner is implemented by an Instance that can cut itself off from the other
// instances of its backend while the test process still reaches it (ContainerBackend:
// a network disconnect). Node.Partition uses it; on a backend without it the Cluster
// needs WithReplicationLinks.
type Partitioner interface {
	// Partition stops all traffic between the instance and the other instances.
	Partition(ctx context.Context) error
	// Heal undoes Partition.
	Heal(ctx context.Context) error
}

// isClosed reports *closed, which mu guards: a backend's StartNode refuses to start a
// node once Close has run.
func isClosed(mu *sync.Mutex, closed *bool) bool {
	mu.Lock()
	defer mu.Unlock()
	return *closed
}
