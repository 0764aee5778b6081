//go:build unix

package harness

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// dockerObjects lists the containers, networks and volumes labelled with the backend's
// cluster id.
func dockerObjects(t *testing.T, id string) []string {
	t.Helper()
	ctx := context.Background()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", LabelCluster+"="+id)
	var out []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Items {
		out = append(out, "volume "+v.Name)
	}
	return out
}

func answers(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := n.QueryInt(ctx, "SELECT 1")
	return err
}

// TestContainerBackend runs a 3-node cluster in containers: replication by container
// name, every fault of the Instance interface, Partition with the published port still
// answering, and Close leaving no container, network or volume behind.
func TestContainerBackend(t *testing.T) {
	if os.Getenv(EnvBackend) != "container" {
		t.Skipf("the container suite's (make containers): run with %s=container", EnvBackend)
	}
	b := &ContainerBackend{Logf: t.Logf}
	c := Start(t, 3, WithBackend(b))
	ctx := context.Background()
	id := b.id
	if objs := dockerObjects(t, id); len(objs) != 7 {
		t.Errorf("objects while running: %v, want 3 containers, 1 network, 3 volumes", objs)
	}
	t.Logf("FIGURE %s: bring_up_ms=%d", t.Name(), c.BringUp().Milliseconds())

	// Addresses: the test process reaches the nodes on 127.0.0.1 only.
	for _, n := range c.Nodes() {
		host, _, _ := net.SplitHostPort(n.Addr())
		if host != "127.0.0.1" {
			t.Errorf("node %d at %s, want 127.0.0.1", n.Index(), n.Addr())
		}
		if p, _ := n.QueryInt(ctx, "SELECT @@port"); int(p) != n.Port() {
			t.Errorf("node %d: @@port %d, Port %d", n.Index(), p, n.Port())
		}
	}
	if h := masterHost(t, c.Node(2)); !strings.HasPrefix(h, "mysqlfailover-") {
		t.Errorf("node 2 replicates from %q, want a container name", h)
	}

	write := func(v int) {
		t.Helper()
		if err := c.Primary().Exec(ctx, "INSERT INTO app.t VALUES (?)", v); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Node(1).Exec(ctx, "CREATE TABLE app.t (v INT PRIMARY KEY)"))
	write(1)
	must(c.WaitReplicasCaughtUp(ctx))

	// Freeze: nothing answers; Thaw: it does again.
	must(c.Node(3).Freeze())
	fctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	if err := answers(fctx, c.Node(3)); err == nil {
		t.Error("a paused node answered")
	}
	cancel()
	must(c.Node(3).Thaw())
	must(answers(ctx, c.Node(3)))

	// Kill and Restart, Stop and Restart: same address and data.
	addr := c.Node(2).Addr()
	begin := time.Now()
	must(c.Node(2).Kill())
	must(c.Node(2).Restart(ctx))
	t.Logf("FIGURE %s: kill_restart_ms=%d", t.Name(), time.Since(begin).Milliseconds())
	begin = time.Now()
	must(c.Node(2).Stop(ctx))
	must(c.Node(2).Restart(ctx))
	t.Logf("FIGURE %s: stop_restart_ms=%d", t.Name(), time.Since(begin).Milliseconds())
	if c.Node(2).Addr() != addr {
		t.Errorf("node 2 moved from %s to %s", addr, c.Node(2).Addr())
	}
	if ro, _ := c.Node(2).QueryInt(ctx, "SELECT @@read_only"); ro != 1 {
		t.Error("restarted replica is not read-only")
	}
	write(2)
	must(c.WaitReplicasCaughtUp(ctx))
	if v, _ := c.Node(2).QueryInt(ctx, "SELECT COUNT(*) FROM app.t"); v != 2 {
		t.Errorf("node 2 has %d rows after its restarts, want 2", v)
	}

	// Partition: the primary keeps answering on its published port, the replicas stop
	// receiving; Heal: they catch up.
	must(c.Node(1).Partition(ctx))
	write(3)
	must(answers(ctx, c.Node(1)))
	db, err := sql.Open("mysql", c.HostDSN(1, ""))
	must(err)
	defer db.Close()
	var one int
	must(db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
	time.Sleep(time.Second)
	if v, _ := c.Node(3).QueryInt(ctx, "SELECT COUNT(*) FROM app.t"); v != 2 {
		t.Errorf("node 3 has %d rows during the partition, want 2", v)
	}
	must(c.Node(1).Heal(ctx))
	begin = time.Now()
	wctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	must(c.WaitReplicasCaughtUp(wctx))
	t.Logf("FIGURE %s: heal_catch_up_ms=%d", t.Name(), time.Since(begin).Milliseconds())

	must(db.Close())
	must(c.Close())
	if objs := dockerObjects(t, id); len(objs) != 0 {
		t.Errorf("left after Close: %v", objs)
	}
}

func TestOwnerAlive(t *testing.T) {
	me := ownerLabels()
	if !ownerAlive(me) {
		t.Error("this process is not alive")
	}
	dead := ownerLabels()
	dead[LabelOwnerPID] = "999999999"
	if ownerAlive(dead) {
		t.Error("pid 999999999 is alive")
	}
	reused := ownerLabels()
	reused[LabelOwnerStart] = "1"
	if procStart(1) != "" && ownerAlive(reused) {
		t.Error("a live pid with another start time counts as the owner")
	}
	other := ownerLabels()
	other[LabelOwnerPID] = "999999999"
	other[LabelOwnerPIDNS] = "pid:[1]"
	if !ownerAlive(other) {
		t.Error("an owner in another pid namespace counts as dead")
	}
}

// masterHost is Master_Host of SHOW SLAVE STATUS.
func masterHost(t *testing.T, n *Node) string {
	rows, err := n.Admin().Query("SHOW SLAVE STATUS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return ""
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for k := range vals {
		ptrs[k] = &vals[k]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for k, c := range cols {
		if c == "Master_Host" {
			return vals[k].String
		}
	}
	return ""
}

func TestRunBuildScript(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	ref, err := runBuildScript(ctx, script("ok.sh", "echo building >&2; echo mysqlfailover-mariadb:0123456789ab"), t.Logf)
	if err != nil || ref != "mysqlfailover-mariadb:0123456789ab" {
		t.Errorf("ok: %q, %v", ref, err)
	}
	_, err = runBuildScript(ctx, script("fail.sh", "echo no debootstrap >&2; exit 3"), t.Logf)
	if !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "no debootstrap") {
		t.Errorf("a failing build: %v, want ErrNoServer with its stderr", err)
	}
	_, err = runBuildScript(ctx, script("two.sh", "echo a; echo b"), t.Logf)
	if err == nil || !strings.Contains(err.Error(), "want one image reference") {
		t.Errorf("two lines: %v", err)
	}
	if _, err = runBuildScript(ctx, "", t.Logf); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), EnvImage) {
		t.Errorf("no script: %v", err)
	}
}

// TestSweep: the sweep at a backend's start removes what a dead owner left and keeps
// what a live one (here: this test's parent process) made. Networks stand for every
// kind of object (containers and volumes are swept by the same labels).
func TestSweep(t *testing.T) {
	ctx := context.Background()
	quietTestcontainers.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	t.Cleanup(func() { cli.Close() }) // first registered, last run: after the removals
	b := &ContainerBackend{cli: cli, Logf: t.Logf}
	make := func(name string, pid int) string {
		labels := ownerLabels()
		labels[LabelOwnerPID] = strconv.Itoa(pid)
		labels[LabelOwnerStart] = procStart(pid)
		res, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cli.NetworkRemove(context.Background(), res.ID, client.NetworkRemoveOptions{}) })
		return res.ID
	}
	suffix := strconv.Itoa(os.Getpid())
	dead := make("mysqlfailover-sweeptest-dead-"+suffix, 999999999)
	live := make("mysqlfailover-sweeptest-live-"+suffix, os.Getppid())
	b.sweep(ctx)
	exists := func(id string) bool {
		_, err := cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
		return err == nil
	}
	if exists(dead) {
		t.Error("the network of a dead owner survived the sweep")
	}
	if !exists(live) {
		t.Error("the sweep removed the network of a live owner")
	}
}
