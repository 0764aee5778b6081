//go:build unix

package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Environment variables read by ContainerBackend and by StartCluster.
const (
	// EnvBackend chooses the backend of a cluster started without WithBackend:
	// "process" (the default: LocalBackend) or "container" (ContainerBackend).
	EnvBackend = "MYSQLFAILOVER_BACKEND"
	// EnvImage is the server image a ContainerBackend runs when its Image is empty
	// ("mysqlfailover-mariadb:0123456789ab", "mariadb:11.4"). Unset: the image that
	// scripts/build-image.sh builds (or finds) in the repository this package comes from.
	EnvImage = "MYSQLFAILOVER_IMAGE"
	// envRyukDisabled is testcontainers-go's switch for its reaper container, whose
	// image cannot be pulled without a registry. The backend cleans up itself.
	envRyukDisabled = "TESTCONTAINERS_RYUK_DISABLED"
)

// Labels on every container, network and volume a ContainerBackend creates. The sweep
// at the start of each backend removes the objects whose owner process is gone (pid
// not alive in the same pid namespace, or alive with another start time), and never
// the objects of a live owner.
const (
	LabelHarness    = "org.mysqlfailover.harness"     // "1"
	LabelCluster    = "org.mysqlfailover.cluster"     // the backend's random id
	LabelOwnerPID   = "org.mysqlfailover.owner.pid"   // the test process's pid
	LabelOwnerStart = "org.mysqlfailover.owner.start" // its start time (clock ticks since boot, Linux)
	LabelOwnerPIDNS = "org.mysqlfailover.owner.pidns" // its pid namespace (readlink /proc/self/ns/pid)
	LabelCreated    = "org.mysqlfailover.created"     // RFC 3339, for people reading docker ps
)

// ErrNoDocker is matched (errors.Is) by the error of a ContainerBackend that finds no
// Docker engine. Start always skips the test on it, also when CI=true: a machine
// without an engine runs the process backend only.
var ErrNoDocker = errors.New("no Docker engine answers (docker info)")

// containerPassword is root's password in every container (MARIADB_ROOT_PASSWORD).
const containerPassword = "rootpw"

// ContainerBackend runs each node as a container (testcontainers-go) of a server image
// that honours the official mariadb (or mysql) image's interface: MARIADB_ROOT_PASSWORD
// (MYSQL_ROOT_PASSWORD), arguments passed on to the server, data in /var/lib/mysql.
//
// Every cluster gets its own user-defined bridge network, named mysqlfailover-<id>; the
// replicas replicate from the primary over it by container name. Containers also sit on
// Docker's default bridge, which publishes each node's port on 127.0.0.1: the test
// process (the driver, the proxies, the admin connections) reaches a node only there,
// never by a container address. Each node's server listens on the same port number
// inside the container as on the host (a free port picked at StartNode and bound
// explicitly), so SELECT @@port names the node as on LocalBackend and a restarted
// container keeps its address. Data live in a volume of the node's own, kept across
// Kill, Stop and Start.
//
// Faults: Kill is docker kill (SIGKILL), Freeze/Thaw docker pause/unpause (the cgroup
// freezer: every process of the node), Stop docker stop (SIGTERM, a clean shutdown),
// Start docker start. The instances implement Partitioner: Partition disconnects the
// container from the cluster network (replication to and from it stops; its published
// port still answers), Heal connects it again.
//
// testcontainers-go's reaper (Ryuk) is disabled (TESTCONTAINERS_RYUK_DISABLED=true is
// set in the process when unset): its image cannot be pulled without a registry. The
// backend removes what it made on Close, and the next backend of any process removes
// what a dead process left (see the Label constants).
//
// The zero value is ready to use.
type ContainerBackend struct {
	// Image is the server image. Empty: EnvImage, else the output of
	// scripts/build-image.sh (which builds the image when it is missing).
	Image string
	// Flavour decides the server options passed (MySQL needs gtid_mode=ON and
	// enforce_gtid_consistency=ON). AutoFlavour: MySQL for an image named mysql,
	// MariaDB otherwise. The Cluster reads its own flavour from VERSION().
	Flavour Flavour
	// Args are extra server options for every node, before each node's NodeSpec.Args.
	Args []string
	// StartTimeout bounds each start until the server answers; default 90 s (a first
	// start initialises the data directory).
	StartTimeout time.Duration
	// Logf, if set, receives a line per step worth knowing (image, network, sweep).
	Logf func(format string, args ...any)

	prepMu   sync.Mutex
	prepErr  error
	prepared bool
	cli      *testcontainers.DockerClient
	image    string
	flavour  Flavour
	id       string
	netID    string
	netName  string
	labels   map[string]string

	mu        sync.Mutex
	instances []*containerInstance
	volumes   []string
	closed    bool
}

func (b *ContainerBackend) logf(format string, args ...any) {
	if b.Logf != nil {
		b.Logf(format, args...)
	}
}

// prepare connects to the engine, sweeps leftovers, resolves the image and creates the
// cluster network, once.
func (b *ContainerBackend) prepare(ctx context.Context) error {
	b.prepMu.Lock()
	defer b.prepMu.Unlock()
	if b.prepared || b.prepErr != nil {
		return b.prepErr
	}
	b.prepErr = b.doPrepare(ctx)
	b.prepared = b.prepErr == nil
	return b.prepErr
}

var quietTestcontainers sync.Once

func (b *ContainerBackend) doPrepare(ctx context.Context) error {
	if v := os.Getenv(envRyukDisabled); v != "true" {
		os.Setenv(envRyukDisabled, "true")
	}
	quietTestcontainers.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
	if !testcontainers.ReadConfig().RyukDisabled {
		return fmt.Errorf("harness: testcontainers-go's reaper is enabled (read before %s=true was set, or by ~/.testcontainers.properties): it cannot run without a registry", envRyukDisabled)
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		if _, err = cli.Ping(ctx, client.PingOptions{}); err != nil {
			cli.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("harness: %w: %v", ErrNoDocker, err)
	}
	b.cli = cli
	fail := func(err error) error {
		b.cli.Close()
		b.cli = nil
		return err
	}
	b.sweep(ctx)

	if b.image, err = b.resolveImage(ctx); err != nil {
		return fail(err)
	}
	if _, err := cli.ImageInspect(ctx, b.image); err != nil {
		return fail(noImage(fmt.Sprintf("image %s is not on this engine (there is no registry to pull from: build it with scripts/build-image.sh): %v", b.image, err)))
	}
	b.flavour = b.Flavour
	if b.flavour == AutoFlavour {
		b.flavour = flavourOfImage(b.image)
	}

	var id [4]byte
	rand.Read(id[:])
	b.id = hex.EncodeToString(id[:])
	b.labels = ownerLabels()
	b.labels[LabelCluster] = b.id
	b.netName = "mysqlfailover-" + b.id
	res, err := cli.NetworkCreate(ctx, b.netName, client.NetworkCreateOptions{Driver: "bridge", Labels: b.labels})
	if err != nil {
		return fail(fmt.Errorf("harness: create network %s: %w", b.netName, err))
	}
	b.netID = res.ID
	b.logf("harness: containers of image %s (%s), network %s", b.image, b.flavour, b.netName)
	return nil
}

// ownerLabels are the labels naming this process as the owner.
func ownerLabels() map[string]string {
	return map[string]string{
		LabelHarness:    "1",
		LabelOwnerPID:   strconv.Itoa(os.Getpid()),
		LabelOwnerStart: procStart(os.Getpid()),
		LabelOwnerPIDNS: pidNS(),
		LabelCreated:    time.Now().UTC().Format(time.RFC3339),
	}
}

// procStart is the start time of process pid (field 22 of /proc/pid/stat), "" when
// unknown (not Linux, or no such process).
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces: count from the closing parenthesis.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22: state is field 3, f[0]
}

func pidNS() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		h, _ := os.Hostname()
		return "host:" + h
	}
	return ns
}

// ownerAlive reports whether the process named by an object's labels may still run. An
// owner in another pid namespace is taken as alive: its pid means nothing here.
func ownerAlive(labels map[string]string) bool {
	if labels[LabelOwnerPIDNS] != pidNS() {
		return true
	}
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	if err != nil || pid <= 0 {
		return true
	}
	if !processAlive(pid) {
		return false
	}
	start := labels[LabelOwnerStart]
	return start == "" || procStart(pid) == "" || procStart(pid) == start
}

// sweep removes the containers, networks and volumes whose owner process is gone.
func (b *ContainerBackend) sweep(ctx context.Context) {
	f := make(client.Filters).Add("label", LabelHarness+"=1")
	var gone []string
	cs, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err == nil {
		for _, c := range cs.Items {
			if !ownerAlive(c.Labels) {
				if _, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err == nil {
					gone = append(gone, "container "+strings.Join(c.Names, ","))
				}
			}
		}
	}
	ns, err := b.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err == nil {
		for _, n := range ns.Items {
			if !ownerAlive(n.Labels) {
				if _, err := b.cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err == nil {
					gone = append(gone, "network "+n.Name)
				}
			}
		}
	}
	vs, err := b.cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
	if err == nil {
		for _, v := range vs.Items {
			if !ownerAlive(v.Labels) {
				if _, err := b.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err == nil {
					gone = append(gone, "volume "+v.Name)
				}
			}
		}
	}
	if len(gone) > 0 {
		b.logf("harness: removed what dead test processes left: %s", strings.Join(gone, ", "))
	}
}

// resolveImage returns b.Image, EnvImage, or the line scripts/build-image.sh prints.
func (b *ContainerBackend) resolveImage(ctx context.Context) (string, error) {
	if b.Image != "" {
		return b.Image, nil
	}
	if v := os.Getenv(EnvImage); v != "" {
		return v, nil
	}
	return buildImage(ctx, b.logf)
}

var (
	builtMu    sync.Mutex
	builtImage string
)

// BuildScript is the path of scripts/build-image.sh in the repository this package was
// built from (found from this source file's location, then from the working directory
// upwards), or "" when neither has one: a copy of the module from the module cache has
// no scripts/, so set EnvImage there.
func BuildScript() string {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, "scripts", "build-image.sh")
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

// buildImage runs scripts/build-image.sh once per process (it reuses an image already
// built from the same contents, and serialises concurrent builds itself).
func buildImage(ctx context.Context, logf func(string, ...any)) (string, error) {
	builtMu.Lock()
	defer builtMu.Unlock()
	if builtImage != "" {
		return builtImage, nil
	}
	ref, err := runBuildScript(ctx, BuildScript(), logf)
	if err == nil {
		builtImage = ref
	}
	return ref, err
}

// runBuildScript runs script (from the repository root) and returns the one line it
// prints on stdout, the image reference; its stderr is the progress, quoted on failure.
func runBuildScript(ctx context.Context, script string, logf func(string, ...any)) (string, error) {
	if script == "" {
		return "", noImage(fmt.Sprintf("no server image: set %s (no scripts/build-image.sh above the harness's source or the working directory)", EnvImage))
	}
	begin := time.Now()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, script)
	cmd.Dir = filepath.Dir(filepath.Dir(script))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", noImage(fmt.Sprintf("harness: %s: %v\n%s", script, err, tail(stderr.String(), 20)))
	}
	ref := strings.TrimSpace(stdout.String())
	if ref == "" || strings.ContainsAny(ref, " \n\t") {
		return "", fmt.Errorf("harness: %s printed %q, want one image reference", script, ref)
	}
	logf("harness: image %s from %s in %v", ref, script, time.Since(begin).Round(time.Millisecond))
	return ref, nil
}

// StartNode creates the node's volume and container, publishes its port on 127.0.0.1,
// attaches it to the cluster network and returns once root can log in through the
// published port. Absolute paths in the node's options that name a regular file on
// this machine ("--ssl-cert=/tmp/x/server.pem") are copied into the container at the
// same path, so the options work unchanged; a directory there is refused (only files
// are copied). Other paths are left to the image.
func (b *ContainerBackend) StartNode(ctx context.Context, spec NodeSpec) (Instance, error) {
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	if isClosed(&b.mu, &b.closed) {
		return nil, errors.New("harness: ContainerBackend is closed")
	}

	if spec.Join {
		return nil, errors.New("harness: ContainerBackend does not add Galera nodes to a running cluster: use LocalBackend")
	}
	if spec.Galera != nil && b.flavour != MariaDB {
		return nil, fmt.Errorf("harness: node %d: a Galera cluster needs a MariaDB image, not %s (%s)", spec.Index, b.image, b.flavour)
	}
	extra := append(append(b.galeraArgs(spec), b.Args...), spec.Args...)
	files, err := filesOf(extra)
	if err != nil {
		return nil, fmt.Errorf("harness: node %d: %w", spec.Index, err)
	}
	name := b.containerName(spec.Index)
	vol, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: maps.Clone(b.labels)})
	if err != nil {
		return nil, fmt.Errorf("harness: node %d: volume: %w", spec.Index, err)
	}
	b.mu.Lock()
	b.volumes = append(b.volumes, vol.Volume.Name)
	b.mu.Unlock()

	data, err := b.template(ctx, spec.Galera != nil)
	if err != nil {
		return nil, err
	}
	i := &containerInstance{b: b, spec: spec, name: name, vol: vol.Volume.Name}
	for attempt := 0; ; attempt++ {
		if err = i.reservePort(); err != nil {
			return nil, err
		}
		err = i.create(ctx, vol.Volume.Name, extra, files, data)
		if err == nil || attempt == 4 || !strings.Contains(err.Error(), "already allocated") && !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("harness: node %d: %w", spec.Index, err)
	}
	return i, nil
}

// filesOf returns the host files named by absolute paths in options.
func filesOf(args []string) ([]testcontainers.ContainerFile, error) {
	var files []testcontainers.ContainerFile
	for _, a := range args {
		_, v, ok := strings.Cut(a, "=")
		if !ok || !filepath.IsAbs(v) {
			continue
		}
		fi, err := os.Stat(v)
		switch {
		case err != nil:
			continue // not a host path: maybe one in the image
		case fi.IsDir():
			return nil, fmt.Errorf("option %s names a directory: a ContainerBackend copies files only", a)
		}
		files = append(files, testcontainers.ContainerFile{HostFilePath: v, ContainerFilePath: v, FileMode: 0o644})
	}
	return files, nil
}

// Close removes every container (with its volumes), the cluster network and the
// volumes, and closes the engine connection.
func (b *ContainerBackend) Close() error {
	b.mu.Lock()
	b.closed = true
	insts, vols := b.instances, b.volumes
	b.instances, b.volumes = nil, nil
	b.mu.Unlock()
	b.prepMu.Lock()
	defer b.prepMu.Unlock()
	if b.cli == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, i := range insts {
		errs = append(errs, i.remove(ctx))
	}
	for _, v := range vols {
		if _, err := b.cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("harness: remove volume %s: %w", v, err))
		}
	}
	if b.netID != "" {
		if _, err := b.cli.NetworkRemove(ctx, b.netID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("harness: remove network %s: %w", b.netName, err))
		}
		b.netID = ""
	}
	errs = append(errs, b.cli.Close())
	b.cli = nil
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "no such") || err != nil && strings.Contains(err.Error(), "not found")
}

// containerInstance is one node's container.
type containerInstance struct {
	b    *ContainerBackend
	spec NodeSpec
	name string
	port int
	lock *os.File // holds port reserved (reservePorts) until remove
	vol  string   // its data volume
	cmd  []string // the server's arguments (the container's Cmd)

	mu          sync.Mutex
	c           *testcontainers.DockerContainer
	running     bool
	frozen      bool
	partitioned bool
	killed      bool // killed since its last start: a Galera node recovers its position first
}

// create creates the container on vol, fills vol with data (a tar of a data directory)
// unless data is nil, attaches it to the cluster network (unless it is the template)
// and starts it.
func (i *containerInstance) create(ctx context.Context, vol string, extra []string, files []testcontainers.ContainerFile, data []byte) error {
	b := i.b
	port := strconv.Itoa(i.port)
	cport := network.MustParsePort(port + "/tcp")
	args := append(b.flavour.serverArgs(i.spec.ServerID, i.port), extra...)
	i.cmd = args
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: b.image,
			Name:  i.name,
			Env: map[string]string{
				"MARIADB_ROOT_PASSWORD":      containerPassword,
				"MYSQL_ROOT_PASSWORD":        containerPassword,
				"MARIADB_INITDB_SKIP_TZINFO": "1",
				"MYSQL_INITDB_SKIP_TZINFO":   "1",
			},
			Cmd:          args,
			Labels:       maps.Clone(b.labels), // testcontainers-go adds its own to it
			ExposedPorts: []string{port + "/tcp"},
			Files:        files,
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{cport: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: port}}}
				hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeVolume, Source: vol, Target: "/var/lib/mysql"})
			},
		},
		Started: false,
		Logger:  tclog.NewNoopLogger(),
	}
	begin := time.Now()
	ctr, err := testcontainers.GenericContainer(ctx, req)
	created := time.Since(begin)
	if ctr != nil {
		if dc, ok := ctr.(*testcontainers.DockerContainer); ok {
			i.c = dc
			b.mu.Lock()
			b.instances = append(b.instances, i)
			b.mu.Unlock()
		}
	}
	if err != nil {
		if i.c != nil {
			i.remove(context.Background())
		}
		return fmt.Errorf("create container %s: %w", i.name, err)
	}
	if data != nil {
		if _, err := b.cli.CopyToContainer(ctx, i.c.ID, client.CopyToContainerOptions{
			DestinationPath: "/var/lib", Content: bytes.NewReader(data), CopyUIDGID: true,
		}); err != nil {
			return fmt.Errorf("copy the template data directory into %s: %w", i.name, err)
		}
		if g := i.spec.Galera; g != nil {
			view := galeraViewState(galeraMembers(g.Name, g.Nodes), i.spec.Index)
			if err := i.copyFile(ctx, "/var/lib/mysql/gvwstate.dat", view, data); err != nil {
				return err
			}
		}
	}
	copied := time.Since(begin)
	if i.spec.Index != 0 {
		if _, err := b.cli.NetworkConnect(ctx, b.netID, client.NetworkConnectOptions{
			Container: i.c.ID, EndpointConfig: &network.EndpointSettings{Aliases: []string{i.name}},
		}); err != nil {
			return fmt.Errorf("connect %s to %s: %w", i.name, b.netName, err)
		}
	}
	connected := time.Since(begin)
	if err := i.Start(ctx); err != nil {
		return err
	}
	b.logf("harness: %s answering %v after its creation (created %v, data copied %v, network %v)", i.name,
		time.Since(begin).Round(time.Millisecond), created.Round(time.Millisecond), copied.Round(time.Millisecond), connected.Round(time.Millisecond))
	return nil
}

// remove removes the container and its anonymous volumes.
func (i *containerInstance) remove(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lock != nil {
		defer i.lock.Close() // the port is free for others once the container is gone
		i.lock = nil
	}
	if i.c == nil {
		return nil
	}
	if i.frozen {
		i.b.cli.ContainerUnpause(ctx, i.c.ID, client.ContainerUnpauseOptions{})
		i.frozen = false
	}
	_, err := i.b.cli.ContainerRemove(ctx, i.c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("harness: remove container %s: %w", i.name, err)
	}
	i.c = nil
	i.running = false
	return nil
}

// reservePort reserves the port the container publishes (and its server listens on), in
// place of the one reserved before: below the ephemeral range, so that no proxy, outgoing
// connection or other test process takes it between a kill and the next start.
func (i *containerInstance) reservePort() error {
	ports, locks, err := reservePorts(1)
	if err != nil {
		return err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.lock != nil {
		i.lock.Close()
	}
	i.port, i.lock = ports[0], locks[0]
	return nil
}

// Addr is 127.0.0.1 and the published port.
func (i *containerInstance) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(i.port)) }

// SourceAddr is the container's name on the cluster network and the server's port.
func (i *containerInstance) SourceAddr() (string, int) { return i.name, i.port }

// AdminDSN is root with the containers' password, through the published port.
func (i *containerInstance) AdminDSN() string {
	return "root:" + containerPassword + "@tcp(" + i.Addr() + ")/"
}

// ContainerName is the container's name (docker ps), also its host name on the cluster
// network.
func (i *containerInstance) ContainerName() string { return i.name }

// LogTail returns the last lines of the container's output (the server's error log).
func (i *containerInstance) LogTail(lines int) string {
	i.mu.Lock()
	c := i.c
	i.mu.Unlock()
	if c == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := c.Logs(ctx)
	if err != nil {
		return "logs: " + err.Error()
	}
	defer rc.Close()
	out, _ := io.ReadAll(rc)
	return tail(string(out), lines)
}

// Start starts the container (created, killed or stopped) and waits until root can log
// in through the published port.
func (i *containerInstance) Start(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil {
		return errors.New("harness: instance is closed")
	}
	if i.running {
		return errors.New("harness: server is already running")
	}
	if i.spec.Galera != nil && i.killed {
		if err := i.recoverGalera(ctx); err != nil {
			return fmt.Errorf("harness: %s: %w", i.name, err)
		}
	}
	i.killed = false
	if err := i.c.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w; container log:\n%s", i.name, err, i.logTailLocked(15))
	}
	i.running = true
	if err := i.waitReady(ctx); err != nil {
		return fmt.Errorf("%w; container log:\n%s", err, i.logTailLocked(15))
	}
	return nil
}

func (i *containerInstance) logTailLocked(lines int) string {
	i.mu.Unlock()
	defer i.mu.Lock()
	return i.LogTail(lines)
}

func (i *containerInstance) waitReady(ctx context.Context) error {
	timeout := i.b.StartTimeout
	if timeout <= 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg, err := mysql.ParseDSN(i.AdminDSN())
	if err != nil {
		return err
	}
	cfg.Timeout = time.Second
	cfg.ReadTimeout = 2 * time.Second
	cfg.WriteTimeout = 2 * time.Second
	// Docker's port proxy accepts and closes connections until the server listens:
	// go-sql-driver would log an "unexpected EOF" for each.
	cfg.Logger = log.New(io.Discard, "", 0)
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for n := 0; ; n++ {
		actx, acancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := connector.Connect(actx)
		acancel()
		if err == nil {
			c.Close()
			return nil
		}
		last = err
		if n%10 == 9 { // every half second: has the server exited?
			st, serr := i.c.State(ctx)
			if serr == nil && !st.Running {
				return fmt.Errorf("container %s exited during start-up (exit code %d)", i.name, st.ExitCode)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server in %s on %s not answering after %v: %v", i.name, i.Addr(), timeout, last)
		case <-tick.C:
		}
	}
}

// Kill is docker kill (SIGKILL; a paused container is unpaused first) and waits until
// the container is no longer running.
func (i *containerInstance) Kill() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || !i.running {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if i.frozen {
		if _, err := i.b.cli.ContainerUnpause(ctx, i.c.ID, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("unpause %s: %w", i.name, err)
		}
		i.frozen = false
	}
	if _, err := i.b.cli.ContainerKill(ctx, i.c.ID, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !strings.Contains(err.Error(), "is not running") {
		return fmt.Errorf("kill %s: %w", i.name, err)
	}
	if err := i.waitNotRunning(ctx); err != nil {
		return err
	}
	i.running = false
	i.killed = true
	return nil
}

func (i *containerInstance) waitNotRunning(ctx context.Context) error {
	w := i.b.cli.ContainerWait(ctx, i.c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
		return nil
	case err := <-w.Error:
		return fmt.Errorf("wait for %s to end: %w", i.name, err)
	}
}

// Freeze is docker pause: the cgroup freezer stops every process in the container; its
// sockets stay open and nothing answers.
func (i *containerInstance) Freeze() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || !i.running {
		return errNotRunning
	}
	if _, err := i.b.cli.ContainerPause(context.Background(), i.c.ID, client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s: %w", i.name, err)
	}
	i.frozen = true
	return nil
}

// Thaw is docker unpause.
func (i *containerInstance) Thaw() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || !i.running {
		return errNotRunning
	}
	if _, err := i.b.cli.ContainerUnpause(context.Background(), i.c.ID, client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause %s: %w", i.name, err)
	}
	i.frozen = false
	return nil
}

// Stop is docker stop: SIGTERM, a clean shutdown, SIGKILL after 60 s or when ctx ends.
func (i *containerInstance) Stop(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || !i.running {
		return nil
	}
	if i.frozen {
		if _, err := i.b.cli.ContainerUnpause(ctx, i.c.ID, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("unpause %s: %w", i.name, err)
		}
		i.frozen = false
	}
	grace := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		grace = max(time.Until(dl)-time.Second, time.Second)
	}
	if err := i.c.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("stop %s: %w", i.name, err)
	}
	i.running = false
	return nil
}

// Partition disconnects the container from the cluster network: replication to and
// from it stops (open replication connections hang until slave_net_timeout), the
// published port keeps answering.
func (i *containerInstance) Partition(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || i.partitioned {
		return nil
	}
	if _, err := i.b.cli.NetworkDisconnect(ctx, i.b.netID, client.NetworkDisconnectOptions{Container: i.c.ID, Force: true}); err != nil {
		return fmt.Errorf("disconnect %s from %s: %w", i.name, i.b.netName, err)
	}
	i.partitioned = true
	return nil
}

// Heal connects the container to the cluster network again, under its name.
func (i *containerInstance) Heal(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.c == nil || !i.partitioned {
		return nil
	}
	if _, err := i.b.cli.NetworkConnect(ctx, i.b.netID, client.NetworkConnectOptions{
		Container: i.c.ID, EndpointConfig: &network.EndpointSettings{Aliases: []string{i.name}},
	}); err != nil {
		return fmt.Errorf("connect %s to %s: %w", i.name, i.b.netName, err)
	}
	i.partitioned = false
	return nil
}

// templates holds, per image, flavour and backend options, a tar of a data directory
// the image's entrypoint initialised (root's password set), without what must differ
// between servers (auto.cnf: the server UUID; binary and relay logs). Every node starts
// from a copy, so the entrypoint's initialisation (about 8 s on 2 cores) runs once per
// test process instead of once per node.
var templates = struct {
	sync.Mutex
	m map[string][]byte
}{m: map[string][]byte{}}

func (b *ContainerBackend) template(ctx context.Context, galera bool) ([]byte, error) {
	key := strings.Join(append([]string{b.image, b.flavour.String(), strconv.FormatBool(galera)}, b.Args...), "\x00")
	templates.Lock()
	defer templates.Unlock()
	if data, ok := templates.m[key]; ok {
		return data, nil
	}
	begin := time.Now()
	name := "mysqlfailover-" + b.id + "-template"
	vol, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: maps.Clone(b.labels)})
	if err != nil {
		return nil, fmt.Errorf("harness: template volume: %w", err)
	}
	defer b.cli.VolumeRemove(context.Background(), vol.Volume.Name, client.VolumeRemoveOptions{Force: true})
	i := &containerInstance{b: b, spec: NodeSpec{Index: 0, ServerID: 1}, name: name}
	if err = i.reservePort(); err != nil {
		return nil, err
	}
	args := b.Args
	if galera {
		// A one-node cluster of its own, shut down cleanly: its data directory is a Galera
		// state every node can start from.
		args = append(b.galeraTemplateArgs(), b.Args...)
	}
	err = i.create(ctx, vol.Volume.Name, args, nil, nil)
	initialised := time.Since(begin)
	if err == nil {
		err = i.Stop(ctx)
	}
	stopped := time.Since(begin)
	var data []byte
	if err == nil {
		data, err = i.dataDir(ctx)
	}
	b.forget(i)
	if rerr := i.remove(context.Background()); err == nil {
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("harness: template data directory: %w", err)
	}
	b.logf("harness: template data directory made in %v (initialised %v, stopped %v; %d KiB)", time.Since(begin).Round(time.Millisecond),
		initialised.Round(time.Millisecond), stopped.Round(time.Millisecond), len(data)>>10)
	templates.m[key] = data
	return data, nil
}

// forget drops i from the instances Close removes.
func (b *ContainerBackend) forget(i *containerInstance) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, x := range b.instances {
		if x == i {
			b.instances = append(b.instances[:k], b.instances[k+1:]...)
			return
		}
	}
}

// dataDir copies /var/lib/mysql out of the stopped container as a tar, leaving out the
// server UUID, the binary and relay logs and the pid and socket files.
func (i *containerInstance) dataDir(ctx context.Context) ([]byte, error) {
	res, err := i.b.cli.CopyFromContainer(ctx, i.c.ID, client.CopyFromContainerOptions{SourcePath: "/var/lib/mysql"})
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	var out bytes.Buffer
	tr, tw := tar.NewReader(res.Content), tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		base := filepath.Base(h.Name)
		if base == "auto.cnf" || base == "ib_buffer_pool" || base == "ibtmp1" || strings.HasPrefix(base, "mysql-bin.") ||
			base == "galera.cache" || base == "gvwstate.dat" ||
			strings.HasPrefix(base, "relay-bin") || strings.HasSuffix(base, ".pid") || strings.HasSuffix(base, ".sock") {
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// noImage is an error about the server image: like a missing server binary, Start skips
// the test on it, or fails it when CI=true.
type noImage string

func (e noImage) Error() string        { return string(e) }
func (e noImage) Is(target error) bool { return target == ErrNoServer }
