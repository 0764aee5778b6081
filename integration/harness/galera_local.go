//go:build unix

package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvGalera names the Galera provider library LocalBackend loads for a Galera cluster
// (WithGalera) instead of searching the usual install locations.
const EnvGalera = "MYSQLFAILOVER_GALERA"

// galeraTemplateVersion changes when the way the Galera template is made changes.
const galeraTemplateVersion = "1"

// localGalera is a LocalBackend's Galera set-up, made at its first Galera node.
type localGalera struct {
	provider string
	cred     *syscall.Credential // the mysql user's, when the test runs as root
	template string              // a data directory that is a Galera state
	ports    [][3]int            // per node (index-1): group communication, IST, SST
	locks    []*os.File          // the ports' lock files, held until Close
}

// findGaleraProvider resolves the provider library: explicit, EnvGalera, usual locations.
func findGaleraProvider(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv(EnvGalera)
	}
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return "", fmt.Errorf("harness: Galera provider %q: %w", explicit, err)
		}
		return explicit, nil
	}
	for _, p := range []string{
		"/usr/lib/galera/libgalera_smm.so", "/usr/lib/libgalera_smm.so", "/usr/lib64/galera-4/libgalera_smm.so",
		"/usr/lib64/galera/libgalera_smm.so", "/usr/local/lib/libgalera_smm.so",
		"/opt/homebrew/lib/libgalera_smm.so", "/usr/local/opt/galera/lib/libgalera_smm.so",
	} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no Galera provider (libgalera_smm.so: `apt-get install galera-4`, or point %s at one)", ErrNoServer, EnvGalera)
}

// prepareGalera finds the provider, the mysql user, rsync, makes the Galera template and
// reserves the ports of the cluster's g.Nodes nodes, once.
func (b *LocalBackend) prepareGalera(ctx context.Context, g *GaleraSpec) (*localGalera, error) {
	b.prepMu.Lock()
	defer b.prepMu.Unlock()
	if b.galera != nil {
		switch have := len(b.galera.ports); {
		case have > g.Nodes:
			return nil, fmt.Errorf("harness: LocalBackend runs one Galera cluster of %d nodes, not %d", have, g.Nodes)
		case have < g.Nodes: // nodes added to the running cluster (Cluster.AddNode)
			ports, locks, err := reservePorts(3 * (g.Nodes - have))
			if err != nil {
				return nil, err
			}
			b.galera.locks = append(b.galera.locks, locks...)
			for k := 0; k < len(ports); k += 3 {
				b.galera.ports = append(b.galera.ports, [3]int{ports[k], ports[k+1], ports[k+2]})
			}
		}
		return b.galera, nil
	}
	lg := &localGalera{}
	var err error
	if lg.provider, err = findGaleraProvider(b.GaleraProvider); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		return nil, fmt.Errorf("%w: rsync is not on PATH (Galera's rsync state transfer needs it: `apt-get install rsync`)", ErrNoServer)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			return nil, fmt.Errorf("harness: Galera nodes run as the mysql user when the tests run as root (rsync state transfers fail as root), and there is none: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		lg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
	}
	if lg.cred != nil {
		// The servers' user must reach its directories inside ours (MkdirTemp makes it 0700).
		if err := os.Chmod(b.root, 0o711); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	if lg.template, err = b.makeGaleraTemplate(ctx, lg); err != nil {
		return nil, err
	}
	ports, locks, err := reservePorts(3 * g.Nodes)
	if err != nil {
		return nil, err
	}
	lg.locks = locks
	for k := 0; k < g.Nodes; k++ {
		lg.ports = append(lg.ports, [3]int{ports[3*k], ports[3*k+1], ports[3*k+2]})
	}
	b.galera = lg
	return lg, nil
}

// makeGaleraTemplate returns a data directory that is the state of a one-node Galera
// cluster shut down cleanly (grastate.dat with its UUID and seqno, the InnoDB position):
// from the cache when made by the same server, provider and settings, else bootstrapped now
// from the plain template (about 0.5 s) and cached. Nodes started from copies of it join
// each other with no state transfer.
func (b *LocalBackend) makeGaleraTemplate(ctx context.Context, lg *localGalera) (string, error) {
	fi, _ := os.Stat(lg.provider)
	var size, mtime int64
	if fi != nil {
		size, mtime = fi.Size(), fi.ModTime().Unix()
	}
	key := "galera-" + templateKey(append([]string{galeraTemplateVersion, b.tplKey, lg.provider,
		strconv.FormatInt(size, 10), strconv.FormatInt(mtime, 10), galeraTuning}, innodbArgs...))
	cache := cacheDir()
	if dir, ok := cachedTemplate(cache, key); ok {
		b.logf("harness: Galera template data directory reused from %s", dir)
		return filepath.Join(dir, "data"), nil
	}
	begin := time.Now()
	dir := filepath.Join(b.root, "galera-template")
	i := &localInstance{
		b:        b,
		spec:     NodeSpec{Index: 0, ServerID: 1},
		dir:      dir,
		datadir:  filepath.Join(dir, "data"),
		logPath:  filepath.Join(dir, "error.log"),
		sockPath: filepath.Join(dir, "mysqld.sock"),
		galera:   lg,
		boot:     true,
	}
	if err := copyTree(b.template, i.datadir, nil); err != nil {
		return "", fmt.Errorf("harness: Galera template: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return "", err
	}
	if err := lg.chown(dir); err != nil {
		return "", err
	}
	ports, locks, err := reservePorts(1)
	if err != nil {
		return "", err
	}
	defer closeAll(locks)
	i.bootPort = ports[0]
	defer i.Close() // kills a server left running and frees its port
	if err := i.startOnReservedPort(ctx); err != nil {
		return "", fmt.Errorf("harness: Galera template: %w", err)
	}
	if err := i.Stop(ctx); err != nil {
		return "", fmt.Errorf("harness: Galera template: %w", err)
	}
	tpl := filepath.Join(b.root, "galera-template-data")
	if err := copyTree(i.datadir, tpl, skipGaleraRuntime); err != nil {
		return "", fmt.Errorf("harness: Galera template: %w", err)
	}
	if _, err := readGrastate(tpl); err != nil {
		return "", fmt.Errorf("harness: Galera template: %w; server log:\n%s", err, tailFile(i.logPath, 15))
	}
	b.logf("harness: Galera template data directory made in %v", time.Since(begin).Round(time.Millisecond))
	if cache != "" {
		if err := storeTemplate(cache, key, tpl); err != nil {
			b.logf("harness: Galera template not cached: %v", err)
		}
	}
	return tpl, nil
}

// skipGaleraRuntime leaves out of a Galera template what must differ between nodes or is
// remade at start: the write-set cache, the saved view, binary logs, pid and socket files.
func skipGaleraRuntime(name string) bool {
	return name == "galera.cache" || name == "gvwstate.dat" || strings.HasPrefix(name, "mysql-bin.") ||
		strings.HasSuffix(name, ".pid") || strings.HasSuffix(name, ".sock") || name == "ibtmp1"
}

// chown gives dir and everything under it to the user the servers run as (when the tests
// run as root).
func (lg *localGalera) chown(dir string) error {
	if lg.cred == nil {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(lg.cred.Uid), int(lg.cred.Gid))
	})
}

// writeFile writes a file the server must own.
func (lg *localGalera) writeFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o660); err != nil {
		return err
	}
	if lg.cred != nil {
		return os.Lchown(path, int(lg.cred.Uid), int(lg.cred.Gid))
	}
	return nil
}

func readGrastate(datadir string) (grastate, error) {
	b, err := os.ReadFile(filepath.Join(datadir, "grastate.dat"))
	if err != nil {
		return grastate{}, err
	}
	return parseGrastate(string(b))
}

// galeraArgs are a local Galera node's options: its ports on 127.0.0.1, every node's group
// communication address. The template's server bootstraps a cluster of its own instead.
func (i *localInstance) galeraArgs() []string {
	lg := i.galera
	if i.boot {
		return []string{
			"--wsrep-on=ON", "--wsrep-provider=" + lg.provider, "--wsrep-cluster-address=gcomm://", "--wsrep-new-cluster",
			"--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:" + strconv.Itoa(i.bootPort) + ";" + galeraTuning,
			"--wsrep-node-address=127.0.0.1:" + strconv.Itoa(i.bootPort),
			"--binlog-format=ROW", "--innodb-autoinc-lock-mode=2", "--wsrep-gtid-mode=ON",
			"--wsrep-gtid-domain-id=" + strconv.Itoa(wsrepGTIDDomain),
		}
	}
	peers := make([]string, len(lg.ports))
	for k, p := range lg.ports {
		peers[k] = "127.0.0.1:" + strconv.Itoa(p[0])
	}
	p := lg.ports[i.spec.Index-1]
	self := "127.0.0.1:" + strconv.Itoa(p[0])
	listen := "gmcast.listen_addr=tcp://" + self + ";ist.recv_addr=127.0.0.1:" + strconv.Itoa(p[1])
	args := galeraServerArgs(i.spec, lg.provider, peers, self, listen, "127.0.0.1:"+strconv.Itoa(p[2]))
	if i.sstDonor != "" {
		args = append(args, "--wsrep-sst-donor="+i.sstDonor+",")
	}
	return args
}

// newGaleraDataDir fills the node's directory from the Galera template, with the saved
// primary component of every member (so that they form it together) and everything owned
// by the server's user.
func (i *localInstance) newGaleraDataDir() error {
	lg := i.galera
	if err := copyTree(lg.template, i.datadir, nil); err != nil {
		return err
	}
	if i.spec.Join {
		// No saved primary component: it joins the running one through its cluster
		// address, from the template's state (IST when the donor still has the write
		// sets since, else a full state transfer).
		return lg.chown(i.dir)
	}
	members := galeraMembers(i.spec.Galera.Name, i.spec.Galera.Nodes)
	if err := os.WriteFile(filepath.Join(i.datadir, "gvwstate.dat"), []byte(galeraViewState(members, i.spec.Index)), 0o660); err != nil {
		return err
	}
	return lg.chown(i.dir)
}

// recoverGalera runs after a Kill, before the server starts again: mariadbd --wsrep-recover
// reads the position InnoDB has committed and the harness writes it into grastate.dat
// (which a killed server leaves at seqno -1), so the node rejoins by IST. A saved state
// with a seqno (a clean stop), or none at all (forgetState), is left as it is.
func (i *localInstance) recoverGalera(ctx context.Context) error {
	g, err := readGrastate(i.datadir)
	if err != nil || g.seqno != -1 || g.uuid == zeroGrastate.uuid {
		return nil
	}
	begin := time.Now()
	logPath := filepath.Join(i.dir, "recover.log")
	os.Remove(logPath)
	args := append(i.serverArgs(), "--wsrep-recover", "--log-error="+logPath)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, i.b.bin, args...)
	cmd.Dir = i.dir
	setProcAttr(cmd)
	cmd.SysProcAttr.Credential = i.galera.cred
	out, err := cmd.CombinedOutput()
	log, _ := os.ReadFile(logPath)
	if err != nil {
		return fmt.Errorf("mariadbd --wsrep-recover: %v\n%s%s", err, out, tail(string(log), 15))
	}
	uuid, seqno, err := recoveredPosition(string(log))
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tail(string(log), 15))
	}
	if uuid != zeroGrastate.uuid {
		g.uuid = uuid
	}
	g.seqno = seqno
	if err := i.galera.writeFile(filepath.Join(i.datadir, "grastate.dat"), g.String()); err != nil {
		return err
	}
	i.b.logf("harness: node %d: --wsrep-recover found %s:%d in %v", i.spec.Index, g.uuid, seqno, time.Since(begin).Round(time.Millisecond))
	return nil
}

// forgetState resets the stopped node's saved state so that its next start asks donor (or
// any node) for a full state transfer.
func (i *localInstance) forgetState(ctx context.Context, donor string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.p != nil {
		return errors.New("harness: forget the Galera state of a running server")
	}
	if i.galera == nil {
		return errors.New("harness: not a Galera node")
	}
	os.Remove(filepath.Join(i.datadir, "gvwstate.dat"))
	i.sstDonor = donor
	return i.galera.writeFile(filepath.Join(i.datadir, "grastate.dat"), zeroGrastate.String())
}

// reservePorts reserves count loopback ports that no other test process of this machine may
// take (a server's port; Galera's group communication, IST and SST): ports below the kernel's
// ephemeral range (which freePort and every outgoing connection use), each one locked by an
// flock on a file of its own in the temp directory for as long as the lock file is open
// (a crashed process's locks go with it), and free to bind when reserved.
func reservePorts(count int) ([]int, []*os.File, error) {
	lo, hi := 10000, ephemeralLow()
	if hi-lo < 1000 {
		lo, hi = 10000, 32768
	}
	dir := filepath.Join(os.TempDir(), "mysqlfailover-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, nil, fmt.Errorf("harness: port locks: %w", err)
	}
	os.Chmod(dir, 0o777|fs.ModeSticky)
	var ports []int
	var locks []*os.File
	start := lo + rand.IntN(hi-lo)
	for k := 0; k < hi-lo && len(ports) < count; k++ {
		p := lo + (start-lo+k)%(hi-lo)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(p)+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			continue
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			f.Close()
			continue
		}
		l.Close()
		ports = append(ports, p)
		locks = append(locks, f)
	}
	if len(ports) < count {
		closeAll(locks)
		return nil, nil, fmt.Errorf("harness: found %d free ports of %d in %d-%d", len(ports), count, lo, hi-1)
	}
	return ports, locks, nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux), else 32768.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

var _ galeraInstance = (*localInstance)(nil)
