//go:build unix

package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Environment variables read by LocalBackend.
const (
	// EnvServer names the mariadbd binary to run instead of searching PATH.
	EnvServer = "MYSQLFAILOVER_MYSQLD"
	// EnvTmpDir is where the nodes' data directories go (default /dev/shm when writable,
	// else the system temp dir). A tmpfs makes initialising and starting servers several
	// times faster.
	EnvTmpDir = "MYSQLFAILOVER_TMPDIR"
	// EnvCache is where initialised template data directories are kept between runs
	// (default: the user cache dir). "off" initialises a fresh one for every backend.
	EnvCache = "MYSQLFAILOVER_CACHE"
)

// innodbArgs are given both to mariadb-install-db and to every server start, so the
// template's InnoDB files fit the servers that copy them. nosync skips fsync: a killed
// process loses nothing (its writes are in the page cache), only a machine crash would.
var innodbArgs = []string{
	"--innodb-buffer-pool-size=16M",
	"--innodb-log-file-size=8M",
	"--innodb-flush-method=nosync",
	"--innodb-use-native-aio=0",
}

// templateVersion changes when the way the template is made changes, so that cached
// templates made the old way are not used.
const templateVersion = "1"

// LocalBackend runs each node as a local mariadbd process: a private copy of a data
// directory initialised once (and cached between runs, see EnvCache), a free loopback
// port, small memory settings, binary log and GTIDs for replication. The processes die
// with the test process (Linux: SIGKILL via Pdeathsig).
//
// The zero value is ready to use. MySQL's mysqld is not supported yet: it is reported as
// ErrNoServer.
type LocalBackend struct {
	// Binary is the mariadbd to run. Empty: EnvServer, then mariadbd or mysqld on PATH,
	// then the usual install locations.
	Binary string
	// Dir is where the data directories go. Empty: EnvTmpDir, /dev/shm, os.TempDir().
	Dir string
	// Args are extra server options, appended to every start of every node (before a
	// node's own NodeSpec.Args).
	Args []string
	// StartTimeout bounds each start until the server answers; default 30s.
	StartTimeout time.Duration
	// Logf, if set, receives a line per step worth knowing (template made or reused).
	Logf func(format string, args ...any)
	// GaleraProvider is the Galera library of a Galera cluster's nodes (WithGalera).
	// Empty: EnvGalera, then the usual install locations (Debian's galera-4:
	// /usr/lib/galera/libgalera_smm.so). None found is ErrNoServer.
	GaleraProvider string

	prepMu   sync.Mutex
	prepared bool
	bin      string // resolved server binary
	basedir  string
	root     string // our temporary directory, removed by Close
	template string // data directory copied for every node
	tplKey   string // the template's cache key
	galera   *localGalera

	mu        sync.Mutex
	instances []*localInstance
	closed    bool
}

func (b *LocalBackend) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}

// StartNode copies the template data directory for the node, starts mariadbd on a free
// loopback port and returns once root can log in. A Galera node (spec.Galera) starts from
// the Galera template, as the mysql user when the test runs as root, on ports reserved for
// the cluster (see WithGalera), and answers once the cluster has formed.
func (b *LocalBackend) StartNode(ctx context.Context, spec NodeSpec) (Instance, error) {
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	if isClosed(&b.mu, &b.closed) {
		return nil, errors.New("harness: LocalBackend is closed")
	}
	var lg *localGalera
	if spec.Galera != nil {
		var err error
		if lg, err = b.prepareGalera(ctx, spec.Galera); err != nil {
			return nil, err
		}
	}

	dir := filepath.Join(b.root, "node"+strconv.Itoa(spec.Index))
	i := &localInstance{
		b:        b,
		spec:     spec,
		dir:      dir,
		datadir:  filepath.Join(dir, "data"),
		logPath:  filepath.Join(dir, "error.log"),
		sockPath: filepath.Join(dir, "mysqld.sock"),
		galera:   lg,
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, err
	}
	if lg != nil {
		if err := i.newGaleraDataDir(); err != nil {
			return nil, fmt.Errorf("harness: node %d: Galera data directory: %w", spec.Index, err)
		}
	} else if err := copyTree(b.template, i.datadir, nil); err != nil {
		return nil, fmt.Errorf("harness: node %d: copy data directory: %w", spec.Index, err)
	}
	b.mu.Lock()
	b.instances = append(b.instances, i)
	b.mu.Unlock()

	if err := i.startOnReservedPort(ctx); err != nil {
		return nil, fmt.Errorf("harness: node %d: %w", spec.Index, err)
	}
	return i, nil
}

// Close kills every instance and removes the backend's directory.
func (b *LocalBackend) Close() error {
	b.mu.Lock()
	b.closed = true
	insts := b.instances
	b.instances = nil
	b.mu.Unlock()
	var errs []error
	for _, i := range insts {
		errs = append(errs, i.Close())
	}
	b.prepMu.Lock()
	defer b.prepMu.Unlock()
	if b.root != "" {
		errs = append(errs, os.RemoveAll(b.root))
		b.root = ""
	}
	if b.galera != nil {
		closeAll(b.galera.locks) // the Galera ports are free for others from here on
		b.galera.locks = nil
	}
	return errors.Join(errs...)
}

// prepare finds the server, makes the backend's directory and the template data
// directory, once.
func (b *LocalBackend) prepare(ctx context.Context) error {
	b.prepMu.Lock()
	defer b.prepMu.Unlock()
	if b.prepared {
		return nil
	}
	bin, err := findServer(b.Binary)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("harness: %s --version: %v: %s", bin, err, bytes.TrimSpace(out))
	}
	version := strings.TrimSpace(string(out))
	if !strings.Contains(version, "MariaDB") {
		return fmt.Errorf("%w: %s is not MariaDB (%s); LocalBackend runs MariaDB only for now", ErrNoServer, bin, version)
	}
	b.bin = bin
	b.basedir = filepath.Dir(filepath.Dir(bin))

	base := b.Dir
	if base == "" {
		base = defaultTmpDir()
	}
	removeStale(base)
	if b.root, err = os.MkdirTemp(base, dirPrefix); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(filepath.Join(b.root, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(b.root)
		return fmt.Errorf("harness: %w", err)
	}
	if b.template, err = b.makeTemplate(ctx, version); err != nil {
		os.RemoveAll(b.root)
		b.root = ""
		return err
	}
	b.prepared = true
	return nil
}

// makeTemplate returns an initialised data directory: from the cache when one was made
// by the same server with the same settings, else made now with mariadb-install-db and
// stored in the cache (best effort, atomically by rename, so concurrent test processes
// never see half a template).
func (b *LocalBackend) makeTemplate(ctx context.Context, version string) (string, error) {
	key := templateKey(append([]string{templateVersion, b.bin, version}, innodbArgs...))
	b.tplKey = key
	cache := cacheDir()
	if dir, ok := cachedTemplate(cache, key); ok {
		b.logf("harness: template data directory reused from %s", dir)
		return filepath.Join(dir, "data"), nil
	}

	start := time.Now()
	tpl := filepath.Join(b.root, "template")
	script, err := findInstallDB(b.basedir)
	if err != nil {
		return "", err
	}
	args := []string{"--no-defaults", "--basedir=" + b.basedir, "--datadir=" + tpl,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	args = append(args, innodbArgs...)
	cmd := exec.CommandContext(ctx, script, args...)
	setProcAttr(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: %s: %v\n%s", script, err, tail(string(out), 20))
	}
	b.logf("harness: template data directory initialised in %v", time.Since(start).Round(time.Millisecond))

	if cache != "" {
		if err := storeTemplate(cache, key, tpl); err != nil {
			b.logf("harness: template not cached: %v", err)
		}
	}
	return tpl, nil
}

const (
	dirPrefix = "mysqlfailover-"
	ownerFile = "owner.pid"
)

// removeStale removes the directories that test processes killed before their clean-up
// left in base (their servers died with them: Pdeathsig). A directory is stale when the
// process named in its owner.pid no longer exists.
func removeStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or being created right now
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

// templateKey is the cache key of a template made from parts (16 hex digits of their
// SHA-256).
func templateKey(parts []string) string {
	h := sha256.New()
	for _, s := range parts {
		io.WriteString(h, s+"\x00")
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// cachedTemplate returns the directory of the complete template stored in cache under
// key, if there is one (cache "": no cache).
func cachedTemplate(cache, key string) (string, bool) {
	if cache == "" {
		return "", false
	}
	dir := filepath.Join(cache, key)
	_, err := os.Stat(filepath.Join(dir, ".complete"))
	return dir, err == nil
}

// storeTemplate copies the template tpl into cache under key, atomically by rename.
func storeTemplate(cache, key, tpl string) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(cache, key+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // a no-op after a successful rename
	if err := copyTree(tpl, filepath.Join(tmp, "data"), nil); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(cache, key)); err != nil {
		if _, serr := os.Stat(filepath.Join(cache, key, ".complete")); serr == nil {
			return nil // another test process stored it first
		}
		return err
	}
	return nil
}

func cacheDir() string {
	switch v := os.Getenv(EnvCache); v {
	case "off":
		return ""
	case "":
		d, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(d, "mysqlfailover-harness")
	default:
		return v
	}
}

func defaultTmpDir() string {
	if d := os.Getenv(EnvTmpDir); d != "" {
		return d
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 2 /* W_OK */) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// findServer resolves the server binary: explicit, EnvServer, PATH, usual locations.
func findServer(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv(EnvServer)
	}
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("harness: server binary %q: %w", explicit, err)
		}
		return filepath.EvalSymlinks(p)
	}
	for _, name := range []string{"mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			return filepath.EvalSymlinks(p)
		}
	}
	for _, p := range []string{
		"/usr/sbin/mariadbd", "/usr/sbin/mysqld",
		"/usr/local/sbin/mariadbd", "/usr/local/bin/mariadbd",
		"/opt/homebrew/opt/mariadb/bin/mariadbd", "/usr/local/opt/mariadb/bin/mariadbd",
	} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return filepath.EvalSymlinks(p)
		}
	}
	return "", ErrNoServer
}

func findInstallDB(basedir string) (string, error) {
	for _, p := range []string{
		filepath.Join(basedir, "bin", "mariadb-install-db"),
		filepath.Join(basedir, "scripts", "mariadb-install-db"),
		filepath.Join(basedir, "bin", "mysql_install_db"),
	} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: mariadb-install-db not found next to the server (%s) nor on PATH", ErrNoServer, basedir)
}

// copyTree copies the regular files and directories under src to dst. auto.cnf (the
// server's UUID) is left out so every copy gets its own, and so is every file whose name
// skip (when not nil) reports.
func copyTree(src, dst string, skip func(name string) bool) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case !info.Mode().IsRegular(), d.Name() == "auto.cnf", skip != nil && skip(d.Name()):
			return nil
		}
		return copyFile(path, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var errPortInUse = errors.New("port in use")

// errNotRunning is returned by Freeze and Thaw on a server that is not running.
var errNotRunning = errors.New("server is not running")

// localInstance is one mariadbd process and its directory.
type localInstance struct {
	b        *LocalBackend
	spec     NodeSpec
	dir      string
	datadir  string
	logPath  string
	sockPath string
	port     int
	portLock *os.File // holds port reserved (reservePorts) until Close

	galera   *localGalera // a Galera node's backend set-up, nil for a plain node
	boot     bool         // the Galera template's server: bootstraps a cluster of its own
	bootPort int          // its group communication port
	sstDonor string       // wsrep_sst_donor for the starts after forgetState

	mu     sync.Mutex
	p      *proc // nil when not running
	frozen bool
	closed bool
	killed bool // killed since the last start: a Galera node recovers its position first
}

// proc is a started server process; done is closed when it has exited.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (i *localInstance) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port))
}
func (i *localInstance) SourceAddr() (string, int) { return "127.0.0.1", i.port }
func (i *localInstance) AdminDSN() string          { return "root@tcp(" + i.Addr() + ")/" }
func (i *localInstance) String() string {
	return fmt.Sprintf("mariadbd node %d on %s", i.spec.Index, i.Addr())
}

// LogTail returns the last lines of the server's error log.
func (i *localInstance) LogTail(lines int) string { return tailFile(i.logPath, lines) }

func (i *localInstance) logSize() int64 {
	fi, err := os.Stat(i.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (i *localInstance) serverArgs() []string {
	args := []string{
		"--no-defaults",
		"--basedir=" + i.b.basedir,
		"--datadir=" + i.datadir,
		"--tmpdir=" + filepath.Join(i.dir, "tmp"),
		"--socket=" + i.sockPath,
		"--pid-file=" + filepath.Join(i.dir, "mysqld.pid"),
		"--log-error=" + i.logPath,
		"--port=" + strconv.Itoa(i.port),
		"--bind-address=127.0.0.1",
		"--skip-name-resolve",
		"--server-id=" + strconv.Itoa(i.spec.ServerID),
		"--log-bin=mysql-bin",
		"--relay-log=relay-bin",
		"--log-slave-updates=ON",
		"--binlog-format=ROW",
		// A replica notices a silent source within 10 s (heartbeats every 5 s).
		"--slave-net-timeout=10",
		"--performance-schema=OFF",
		"--max-connections=500",
		"--key-buffer-size=1M",
		"--aria-pagecache-buffer-size=8M",
		"--loose-feedback=OFF",
	}
	if os.Geteuid() == 0 && i.galera == nil {
		args = append(args, "--user=root") // a Galera node runs as the mysql user instead
	}
	args = append(args, innodbArgs...)
	if i.galera != nil {
		args = append(args, i.galeraArgs()...)
	}
	args = append(args, i.b.Args...)
	return append(args, i.spec.Args...) // last: a node's own options win
}

// Start runs mariadbd on the instance's port and data and waits until root can log in.
func (i *localInstance) Start(ctx context.Context) error {
	i.mu.Lock()
	if i.closed {
		i.mu.Unlock()
		return errors.New("harness: instance is closed")
	}
	if i.p != nil {
		i.mu.Unlock()
		return errors.New("harness: server is already running")
	}
	if i.galera != nil && i.killed {
		if err := i.recoverGalera(ctx); err != nil {
			i.mu.Unlock()
			return fmt.Errorf("harness: node %d: %w", i.spec.Index, err)
		}
	}
	i.killed = false
	off := i.logSize()
	logf, err := os.OpenFile(i.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		i.mu.Unlock()
		return err
	}
	cmd := exec.Command(i.b.bin, i.serverArgs()...)
	cmd.Dir = i.dir
	cmd.Stdout, cmd.Stderr = logf, logf // *os.File: no copying goroutines
	setProcAttr(cmd)
	if i.galera != nil {
		// Go sets the parent-death signal after the credentials, so it survives them.
		cmd.SysProcAttr.Credential = i.galera.cred
	}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		i.mu.Unlock()
		return fmt.Errorf("start %s: %w", i.b.bin, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	i.p = p
	i.frozen = false
	i.mu.Unlock()

	err = i.waitReady(ctx, p)
	if err == nil {
		return nil
	}
	i.mu.Lock()
	if i.p == p {
		p.cmd.Process.Kill()
		<-p.done
		i.p = nil
	}
	i.mu.Unlock()
	log := tailFileFrom(i.logPath, off, 15)
	if strings.Contains(log, "Address already in use") || strings.Contains(log, "Do you already have another server running") {
		return fmt.Errorf("%w: %s: %v", errPortInUse, i.Addr(), err)
	}
	return fmt.Errorf("%v; server log:\n%s", err, log)
}

func (i *localInstance) waitReady(ctx context.Context, p *proc) error {
	timeout := i.b.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = i.Addr()
	cfg.Timeout = time.Second
	cfg.ReadTimeout = 2 * time.Second
	cfg.WriteTimeout = 2 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("mariadbd exited during start-up (%v)", p.err)
		default:
		}
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		err := i.answers(actx, connector)
		acancel()
		if err == nil {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("mariadbd on %s not answering after %v: %v", i.Addr(), timeout, last)
		case <-p.done:
			return fmt.Errorf("mariadbd exited during start-up (%v)", p.err)
		case <-tick.C:
		}
	}
}

// answers logs in on the instance's port and checks that the server there is this one (its
// @@socket): while this server starts, another process may listen on its port (a proxy, or
// another test process's server, handed the same port by the kernel), and this server's bind
// then fails. Taking that other server's answer for this one's (seen once in CI) left a node
// that never started and a replica replicating from itself.
func (i *localInstance) answers(ctx context.Context, connector driver.Connector) error {
	c, err := connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rows, err := c.(driver.QueryerContext).QueryContext(ctx, "SELECT @@socket", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return err
	}
	if sock, _ := v[0].([]byte); string(sock) != i.sockPath {
		return fmt.Errorf("another server answers on %s (socket %q)", i.Addr(), sock)
	}
	return nil
}

// Kill sends SIGKILL (after SIGCONT if frozen) and waits for the process to be gone.
func (i *localInstance) Kill() error {
	i.mu.Lock()
	p := i.p
	if p == nil {
		i.mu.Unlock()
		return nil
	}
	if i.frozen {
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	if i.galera != nil {
		// The whole process group: a state transfer's script and rsync daemon too.
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	err := p.cmd.Process.Kill()
	<-p.done
	i.p = nil
	i.frozen = false
	i.killed = true
	i.mu.Unlock()
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// Freeze sends SIGSTOP and, on Linux, waits until the process is stopped.
func (i *localInstance) Freeze() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.p == nil {
		return errNotRunning
	}
	if err := i.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	i.frozen = true
	waitStopped(i.p.cmd.Process.Pid, true)
	return nil
}

// Thaw sends SIGCONT.
func (i *localInstance) Thaw() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.p == nil {
		return errNotRunning
	}
	if err := i.p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	i.frozen = false
	waitStopped(i.p.cmd.Process.Pid, false)
	return nil
}

// Stop sends SIGTERM and waits for a clean shutdown; when ctx ends first (or after 60 s
// without a deadline) it kills the server and says so.
func (i *localInstance) Stop(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	p := i.p
	if p == nil {
		return nil
	}
	if i.frozen {
		p.cmd.Process.Signal(syscall.SIGCONT)
		i.frozen = false
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	var err error
	select {
	case <-p.done:
	case <-ctx.Done():
		p.cmd.Process.Kill()
		<-p.done
		i.killed = true
		err = fmt.Errorf("harness: %s did not shut down in time, killed: %w", i, ctx.Err())
	}
	i.p = nil
	return err
}

// Close kills the server and frees its port; the instance cannot be started again.
func (i *localInstance) Close() error {
	err := i.Kill()
	i.mu.Lock()
	i.closed = true
	lock := i.portLock
	i.portLock = nil
	i.mu.Unlock()
	if lock != nil {
		lock.Close()
	}
	return err
}

// startOnReservedPort reserves the instance's port (reservePorts: below the ephemeral range,
// so that no proxy, outgoing connection or other test process takes it while the server
// starts or between a kill and a restart) and starts the server on it, on another one if a
// server of some other program holds it.
func (i *localInstance) startOnReservedPort(ctx context.Context) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		ports, locks, rerr := reservePorts(1)
		if rerr != nil {
			return rerr
		}
		i.mu.Lock()
		i.port, i.portLock = ports[0], locks[0]
		i.mu.Unlock()
		if err = i.Start(ctx); !errors.Is(err, errPortInUse) {
			return err
		}
		i.mu.Lock()
		i.portLock = nil
		i.mu.Unlock()
		locks[0].Close()
	}
	return err
}

func tailFile(path string, lines int) string { return tailFileFrom(path, 0, lines) }

func tailFileFrom(path string, off int64, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if off > 0 {
		f.Seek(off, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return tail(string(b), lines)
}

func tail(s string, lines int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

var _ Backend = (*LocalBackend)(nil)
var _ Instance = (*localInstance)(nil)
